// The per-tensor types of the K-quant mixes on austen-7m (8 layers, 8 query
// and 4 KV heads, tied embeddings), written out by hand from llama.cpp's rules
// in src/llama-quant.cpp (llama_tensor_get_type_impl):
//  - use_more_bits(i, 8) is true for layers 0, 3, 6, 7;
//  - tied embeddings: token_embd is treated as the output tensor -> q6_K;
//  - n_gqa = 2, so the "n_gqa >= 4" branches never apply.

#include <gtest/gtest.h>

#include <map>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/quantizer/type_mix.h"
#include "support/test_paths.h"

namespace cria::quantizer {
namespace {

using E = ElementType;

struct Expected {
    E token_embd, attn_q, attn_k, attn_output, ffn_gate, ffn_up;
    std::map<int, E> attn_v;    // per layer
    std::map<int, E> ffn_down;  // per layer
};

std::map<int, E> layers(E more, E rest, std::initializer_list<int> more_layers) {
    std::map<int, E> m;
    for (int i = 0; i < 8; ++i) m[i] = rest;
    for (int i : more_layers) m[i] = more;
    return m;
}

void check(FileType ft, const Expected& want) {
    auto file = gguf::File::open(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    const ModelFacts facts{"llama", 8, 8, 4, 0};
    MixOptions options;
    options.file_type = ft;
    const auto plans = plan_tensor_types(file->tensors(), facts, options);
    for (size_t i = 0; i < plans.size(); ++i) {
        const std::string& name = file->tensors()[i].name;
        int layer = -1;
        std::sscanf(name.c_str(), "blk.%d.", &layer);
        E expected;
        if (name.find("norm") != std::string::npos) expected = E::F32;
        else if (name == "token_embd.weight") expected = want.token_embd;
        else if (name.find("attn_q.") != std::string::npos) expected = want.attn_q;
        else if (name.find("attn_k.") != std::string::npos) expected = want.attn_k;
        else if (name.find("attn_v.") != std::string::npos) expected = want.attn_v.at(layer);
        else if (name.find("attn_output.") != std::string::npos) expected = want.attn_output;
        else if (name.find("ffn_gate.") != std::string::npos) expected = want.ffn_gate;
        else if (name.find("ffn_up.") != std::string::npos) expected = want.ffn_up;
        else if (name.find("ffn_down.") != std::string::npos) expected = want.ffn_down.at(layer);
        else FAIL() << "unexpected tensor " << name;
        EXPECT_EQ(plans[i].type, expected) << name << ": got " << element_type_name(plans[i].type) << ", want "
                                           << element_type_name(expected);
        EXPECT_EQ(plans[i].quantizable, expected != E::F32) << name;
    }
}

TEST(TypeMix, Q4_K_M) {
    check(FileType::MOSTLY_Q4_K_M, {E::Q6_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K,
                                    layers(E::Q6_K, E::Q4_K, {0, 3, 6, 7}), layers(E::Q6_K, E::Q4_K, {0, 3, 6, 7})});
}

TEST(TypeMix, Q3_K_M) {
    // attn_v: the first two get q5_K, the rest q4_K; ffn_down: n_layer/16 = 0, so all q4_K.
    check(FileType::MOSTLY_Q3_K_M, {E::Q6_K, E::Q3_K, E::Q3_K, E::Q4_K, E::Q3_K, E::Q3_K,
                                    layers(E::Q5_K, E::Q4_K, {0, 1}), layers(E::Q4_K, E::Q4_K, {})});
}

TEST(TypeMix, Q5_K_S) {
    check(FileType::MOSTLY_Q5_K_S, {E::Q6_K, E::Q5_K, E::Q5_K, E::Q5_K, E::Q5_K, E::Q5_K,
                                    layers(E::Q5_K, E::Q5_K, {}), layers(E::Q5_K, E::Q5_K, {})});
}

TEST(TypeMix, Q2_K) {
    check(FileType::MOSTLY_Q2_K, {E::Q6_K, E::Q2_K, E::Q2_K, E::Q3_K, E::Q2_K, E::Q2_K,
                                  layers(E::Q3_K, E::Q3_K, {}), layers(E::Q3_K, E::Q3_K, {})});
}

TEST(TypeMix, Q4_K_S_AndQ5_K_M) {
    // Q4_K_S: attn_v of the first 4 layers and ffn_down of the first eighth get q5_K.
    check(FileType::MOSTLY_Q4_K_S, {E::Q6_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K,
                                    layers(E::Q5_K, E::Q4_K, {0, 1, 2, 3}), layers(E::Q5_K, E::Q4_K, {0})});
    check(FileType::MOSTLY_Q5_K_M, {E::Q6_K, E::Q5_K, E::Q5_K, E::Q5_K, E::Q5_K, E::Q5_K,
                                    layers(E::Q6_K, E::Q5_K, {0, 3, 6, 7}), layers(E::Q6_K, E::Q5_K, {0, 3, 6, 7})});
}

TEST(TypeMix, GqaAndExpertsChangeAttnV) {
    // With 8 query heads per KV head, Q2_K gives attn_v q4_K; 8 experts give q8_0.
    auto file = gguf::File::open(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    MixOptions options;
    options.file_type = FileType::MOSTLY_Q2_K;
    auto plans = plan_tensor_types(file->tensors(), ModelFacts{"llama", 8, 32, 4, 0}, options);
    const auto& tensors = file->tensors();
    for (size_t i = 0; i < plans.size(); ++i)
        if (tensors[i].name.find("attn_v") != std::string::npos) { EXPECT_EQ(plans[i].type, E::Q4_K); }
    plans = plan_tensor_types(file->tensors(), ModelFacts{"llama", 8, 8, 4, 8}, options);
    for (size_t i = 0; i < plans.size(); ++i) {
        if (tensors[i].name.find("attn_v") != std::string::npos) { EXPECT_EQ(plans[i].type, E::Q8_0); }
        if (tensors[i].name.find("attn_output") != std::string::npos) { EXPECT_EQ(plans[i].type, E::Q5_K); }
    }
}

TEST(TypeMix, NeverQuantized) {
    gguf::TensorInfo t;
    t.n_dims = 2;
    t.ne = {256, 256, 1, 1};
    for (const char* name : {"blk.0.attn_norm.weight", "blk.0.ffn_gate_inp.weight", "position_embd.weight",
                             "v.position_embd.weight", "v.patch_embd.weight", "blk.0.attn_q.bias"}) {
        t.name = name;
        EXPECT_FALSE(tensor_allows_quantization(t, true)) << name;
    }
    t.name = "blk.0.ffn_up.weight";
    EXPECT_TRUE(tensor_allows_quantization(t, true));
    t.ne = {256, 1, 1, 1};  // 1-D in effect
    EXPECT_FALSE(tensor_allows_quantization(t, true));
    t.ne = {256, 256, 1, 1};
    t.name = "output.weight";
    EXPECT_FALSE(tensor_allows_quantization(t, false));
}

}  // namespace
}  // namespace cria::quantizer
