// The per-tensor types llama-quantize chooses in mixture-of-experts models,
// written out by hand from llama.cpp's rules (src/llama-quant.cpp,
// llama_tensor_get_type_impl) for tensor lists shaped like real MoE files:
//  - expert tensors (ffn_*_exps, 3-D) follow the ffn_gate/up/down rules, with
//    the layer read from the name (not a counter, as experts may be
//    interleaved); shared experts (ffn_*_shexp) count as ffn_down too;
//  - the router (ffn_gate_inp) is never quantized;
//  - exactly 8 experts (Mixtral) bumps attn_v and attn_k to q8_0 and
//    attn_output to q5_K for the low-bit mixes;
//  - MXFP4_MOE: 3-D expert tensors MXFP4, every other weight q8_0 (on
//    bailingmoe3 only the expert FFN roles, its MLA projections are 3-D too).
// Widths are multiples of 256 so that no K-quant falls back.
//
// With 16 layers, use_more_bits(i, 16) holds for i < 2, i >= 14 and
// (i - 2) % 3 == 2, i.e. layers {0, 1, 4, 7, 10, 13, 14, 15}.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cria/core/error.h"
#include "cria/quantizer/type_mix.h"

namespace cria::quantizer {
namespace {

using E = ElementType;

gguf::TensorInfo info(const std::string& name, std::vector<uint64_t> shape) {
    gguf::TensorInfo t;
    t.name = name;
    t.type = E::F32;
    t.n_dims = static_cast<uint32_t>(shape.size());
    t.ne = {1, 1, 1, 1};
    for (size_t i = 0; i < shape.size(); ++i) t.ne[i] = shape[i];
    return t;
}

// A qwen3moe/Mixtral-like file: untied output, per layer attention, head
// norms, router and stacked experts; optionally shared experts (qwen2moe).
// The tensors are listed in the order a converter writes them, not llama.cpp's.
std::vector<gguf::TensorInfo> moe_tensors(int n_layer, uint64_t n_expert, bool shared_expert) {
    const uint64_t embd = 256, ff = 512, kv = 64;
    std::vector<gguf::TensorInfo> t = {info("token_embd.weight", {embd, 1024})};
    for (int l = 0; l < n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        t.push_back(info(p + "attn_norm.weight", {embd}));
        t.push_back(info(p + "attn_q.weight", {embd, embd}));
        t.push_back(info(p + "attn_k.weight", {embd, kv}));
        t.push_back(info(p + "attn_v.weight", {embd, kv}));
        t.push_back(info(p + "attn_q_norm.weight", {16}));
        t.push_back(info(p + "attn_output.weight", {embd, embd}));
        t.push_back(info(p + "ffn_norm.weight", {embd}));
        t.push_back(info(p + "ffn_gate_inp.weight", {embd, n_expert}));
        t.push_back(info(p + "ffn_gate_exps.weight", {embd, ff, n_expert}));
        t.push_back(info(p + "ffn_up_exps.weight", {embd, ff, n_expert}));
        t.push_back(info(p + "ffn_down_exps.weight", {ff, embd, n_expert}));
        if (shared_expert) {
            t.push_back(info(p + "ffn_gate_inp_shexp.weight", {embd}));
            t.push_back(info(p + "ffn_gate_shexp.weight", {embd, ff}));
            t.push_back(info(p + "ffn_up_shexp.weight", {embd, ff}));
            t.push_back(info(p + "ffn_down_shexp.weight", {ff, embd}));
        }
    }
    t.push_back(info("output_norm.weight", {embd}));
    t.push_back(info("output.weight", {embd, 1024}));
    return t;
}

// Expected type of a role: one type, or one per layer (`more` on `layers`).
struct Rule {
    E rest;
    E more = E::F32;  // unused when `layers` is empty
    std::set<int> layers;
    E at(int layer) const { return layers.count(layer) ? more : rest; }
};

struct Mix {
    E token_embd, output, attn_q, attn_k, attn_output, ffn_gate_up;
    Rule attn_v, ffn_down;
};

const std::set<int> kMoreBits16 = {0, 1, 4, 7, 10, 13, 14, 15};

// Checks every tensor of `tensors` against `want`.
void check(const std::vector<gguf::TensorInfo>& tensors, const ModelFacts& facts, FileType ft, const Mix& want,
           bool has_imatrix = false) {
    MixOptions options;
    options.file_type = ft;
    options.has_imatrix = has_imatrix;
    const auto plans = plan_tensor_types(tensors, facts, options);
    ASSERT_EQ(plans.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string& name = tensors[i].name;
        int layer = -1;
        std::sscanf(name.c_str(), "blk.%d.", &layer);
        auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
        E expected;
        bool quantizable = true;
        if (has("norm") || has("ffn_gate_inp")) expected = E::F32, quantizable = false;
        else if (name == "token_embd.weight") expected = want.token_embd;
        else if (name == "output.weight") expected = want.output;
        else if (has("attn_q.")) expected = want.attn_q;
        else if (has("attn_k.")) expected = want.attn_k;
        else if (has("attn_v.")) expected = want.attn_v.at(layer);
        else if (has("attn_output.")) expected = want.attn_output;
        else if (has("ffn_down")) expected = want.ffn_down.at(layer);
        else if (has("ffn_gate") || has("ffn_up")) expected = want.ffn_gate_up;
        else FAIL() << "unexpected tensor " << name;
        EXPECT_EQ(plans[i].type, expected) << file_type_info(ft)->name << " " << name << ": got "
                                           << element_type_name(plans[i].type) << ", want "
                                           << element_type_name(expected);
        EXPECT_EQ(plans[i].quantizable, quantizable) << name;
        EXPECT_TRUE(plans[i].note.empty()) << name << ": " << plans[i].note;
    }
}

// Qwen3-30B-A3B-like: 128 experts, 4 query heads per KV head.
const ModelFacts kQwen3Moe{"qwen3moe", 16, 16, 4, 128};

TEST(TypeMixMoe, Qwen3MoeQ4_K_M) {
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q4_K_M,
          {E::Q4_K, E::Q6_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K, {E::Q4_K, E::Q6_K, kMoreBits16},
           {E::Q4_K, E::Q6_K, kMoreBits16}});
}

TEST(TypeMixMoe, Qwen3MoeQ5_K_MAndQ5_K_S) {
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q5_K_M,
          {E::Q5_K, E::Q6_K, E::Q5_K, E::Q5_K, E::Q5_K, E::Q5_K, {E::Q5_K, E::Q6_K, kMoreBits16},
           {E::Q5_K, E::Q6_K, kMoreBits16}});
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q5_K_S,
          {E::Q5_K, E::Q6_K, E::Q5_K, E::Q5_K, E::Q5_K, E::Q5_K, {E::Q5_K}, {E::Q5_K}});
}

TEST(TypeMixMoe, Qwen3MoeQ4_K_S) {
    // attn_v of the first four layers, ffn_down_exps of the first eighth (2 layers).
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q4_K_S,
          {E::Q4_K, E::Q6_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K, {E::Q4_K, E::Q5_K, {0, 1, 2, 3}},
           {E::Q4_K, E::Q5_K, {0, 1}}});
}

TEST(TypeMixMoe, Qwen3MoeQ3_K) {
    // Q3_K_M: attn_v q5_K for the first two, ffn_down_exps q5_K for the first
    // sixteenth (layer 0) and q4_K after; attn_output q4_K.
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q3_K_M,
          {E::Q3_K, E::Q6_K, E::Q3_K, E::Q3_K, E::Q4_K, E::Q3_K, {E::Q4_K, E::Q5_K, {0, 1}}, {E::Q4_K, E::Q5_K, {0}}});
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q3_K_L,
          {E::Q3_K, E::Q6_K, E::Q3_K, E::Q3_K, E::Q5_K, E::Q3_K, {E::Q5_K}, {E::Q5_K}});
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q3_K_S,
          {E::Q3_K, E::Q6_K, E::Q3_K, E::Q3_K, E::Q3_K, E::Q3_K, {E::Q3_K}, {E::Q3_K}});
}

TEST(TypeMixMoe, Qwen3MoeQ2_K) {
    // n_gqa = 4: attn_v q4_K; ffn_down_exps and attn_output q3_K.
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q2_K,
          {E::Q2_K, E::Q6_K, E::Q2_K, E::Q2_K, E::Q3_K, E::Q2_K, {E::Q4_K}, {E::Q3_K}});
}

TEST(TypeMixMoe, Qwen3MoeMxfp4Moe) {
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_MXFP4_MOE,
          {E::Q8_0, E::Q8_0, E::Q8_0, E::Q8_0, E::Q8_0, E::MXFP4, {E::Q8_0}, {E::MXFP4}});
}

// Mixtral-like: exactly 8 experts, 32 layers (use_more_bits(i, 32): i < 4,
// i >= 28, (i - 4) % 3 == 2).
TEST(TypeMixMoe, EightExpertsBumpAttention) {
    const ModelFacts mixtral{"llama", 32, 16, 4, 8};
    std::set<int> more;
    for (int i = 0; i < 32; ++i)
        if (i < 4 || i >= 28 || (i - 4) % 3 == 2) more.insert(i);
    EXPECT_EQ(more, (std::set<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_Q4_K_M,
          {E::Q4_K, E::Q6_K, E::Q4_K, E::Q8_0, E::Q5_K, E::Q4_K, {E::Q8_0}, {E::Q4_K, E::Q6_K, more}});
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_Q3_K_M,
          {E::Q3_K, E::Q6_K, E::Q3_K, E::Q8_0, E::Q5_K, E::Q3_K, {E::Q8_0}, {E::Q4_K, E::Q5_K, {0, 1}}});
    // Q5_K_M and Q6_K are not in the attn_output list; attn_v/attn_k still q8_0.
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_Q5_K_M,
          {E::Q5_K, E::Q6_K, E::Q5_K, E::Q8_0, E::Q5_K, E::Q5_K, {E::Q8_0}, {E::Q5_K, E::Q6_K, more}});
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_Q6_K,
          {E::Q6_K, E::Q6_K, E::Q6_K, E::Q8_0, E::Q6_K, E::Q6_K, {E::Q8_0}, {E::Q6_K}});
    // Legacy types keep their rules: attn_v/attn_k bumped, the rest q4_0.
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_Q4_0,
          {E::Q4_0, E::Q6_K, E::Q4_0, E::Q8_0, E::Q4_0, E::Q4_0, {E::Q8_0}, {E::Q4_0}});
}

TEST(TypeMixMoe, NonLinearAndLowBitMixes) {
    // IQ4_XS with n_gqa = 4: attn_v q5_K; ffn_down_exps of the first eighth
    // q5_K unless an imatrix is given.
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_IQ4_XS,
          {E::IQ4_XS, E::Q6_K, E::IQ4_XS, E::IQ4_XS, E::IQ4_XS, E::IQ4_XS, {E::Q5_K}, {E::IQ4_XS, E::Q5_K, {0, 1}}});
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_IQ4_XS,
          {E::IQ4_XS, E::Q6_K, E::IQ4_XS, E::IQ4_XS, E::IQ4_XS, E::IQ4_XS, {E::Q5_K}, {E::IQ4_XS}}, true);
    // Eight experts: attn_v/attn_k q8_0 over the gqa rule, attn_output q5_K.
    const ModelFacts mixtral{"llama", 32, 16, 4, 8};
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_IQ4_NL,
          {E::IQ4_NL, E::Q6_K, E::IQ4_NL, E::Q8_0, E::Q5_K, E::IQ4_NL, {E::Q8_0}, {E::IQ4_NL, E::Q5_K, {0, 1, 2, 3}}});
    // Q2_K_S: attn_v q4_K (n_gqa >= 4), ffn_down_exps q4_K for the first eighth;
    // attn_output stays q2_K (Q2_K_S is not in the 8-expert list either).
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q2_K_S,
          {E::Q2_K, E::Q6_K, E::Q2_K, E::Q2_K, E::Q2_K, E::Q2_K, {E::Q4_K}, {E::Q2_K, E::Q4_K, {0, 1}}}, true);
    check(moe_tensors(32, 8, false), mixtral, FileType::MOSTLY_Q2_K_S,
          {E::Q2_K, E::Q6_K, E::Q2_K, E::Q8_0, E::Q2_K, E::Q2_K, {E::Q8_0}, {E::Q2_K, E::Q4_K, {0, 1, 2, 3}}}, true);
    // Q5_0 with an imatrix guards the first eighth of ffn_down_exps with q5_1.
    check(moe_tensors(16, 128, false), kQwen3Moe, FileType::MOSTLY_Q5_0,
          {E::Q5_0, E::Q6_K, E::Q5_0, E::Q5_0, E::Q5_0, E::Q5_0, {E::Q5_0}, {E::Q5_0, E::Q5_1, {0, 1}}}, true);
}

TEST(TypeMixMoe, SharedExpertsCountAsFfnDown) {
    // qwen2moe-like: ffn_down_shexp takes ffn_down's per-layer rule (the layer
    // comes from its name); the shared-expert gate is a vector, never quantized.
    const ModelFacts qwen2moe{"qwen2moe", 16, 16, 16, 60};
    check(moe_tensors(16, 60, true), qwen2moe, FileType::MOSTLY_Q4_K_M,
          {E::Q4_K, E::Q6_K, E::Q4_K, E::Q4_K, E::Q4_K, E::Q4_K, {E::Q4_K, E::Q6_K, kMoreBits16},
           {E::Q4_K, E::Q6_K, kMoreBits16}});
    // MXFP4_MOE: the shared expert is 2-D, so q8_0 like the attention.
    MixOptions options;
    options.file_type = FileType::MOSTLY_MXFP4_MOE;
    const auto tensors = moe_tensors(16, 60, true);
    const auto plans = plan_tensor_types(tensors, qwen2moe, options);
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (tensors[i].name.find("shexp.weight") == std::string::npos) continue;
        EXPECT_EQ(plans[i].type, tensors[i].n_dims == 1 ? E::F32 : E::Q8_0) << tensors[i].name;
    }
}

TEST(TypeMixMoe, ExpertLayerComesFromTheName) {
    // A tensor named outside the model's layers is an error, not a wrong type.
    auto tensors = moe_tensors(16, 128, false);
    tensors.push_back(info("blk.16.ffn_down_exps.weight", {512, 256, 128}));
    MixOptions options;
    options.file_type = FileType::MOSTLY_Q4_K_M;
    EXPECT_THROW(plan_tensor_types(tensors, kQwen3Moe, options), Error);
}

TEST(TypeMixMoe, Mxfp4MoeOnBailingMoe3KeepsMlaProjectionsQ8) {
    // A 3-D attention projection (MLA's per-head k_b) is an expert tensor to
    // the generic MXFP4_MOE rule, but not on bailingmoe3.
    std::vector<gguf::TensorInfo> tensors = {info("blk.0.attn_k_b.weight", {128, 512, 16}),
                                             info("blk.0.ffn_up_exps.weight", {256, 512, 8}),
                                             info("blk.0.ffn_down_shexp.weight", {512, 256})};
    MixOptions options;
    options.file_type = FileType::MOSTLY_MXFP4_MOE;
    auto plans = plan_tensor_types(tensors, ModelFacts{"bailingmoe3", 1, 16, 16, 8}, options);
    EXPECT_EQ(plans[0].type, E::Q8_0);
    EXPECT_EQ(plans[1].type, E::MXFP4);
    EXPECT_EQ(plans[2].type, E::Q8_0);
    plans = plan_tensor_types(tensors, ModelFacts{"deepseek2", 1, 16, 16, 8}, options);
    EXPECT_EQ(plans[0].type, E::MXFP4);
    EXPECT_EQ(plans[1].type, E::MXFP4);
}

}  // namespace
}  // namespace cria::quantizer
