// Converting GptOssForCausalLM checkpoints at the file level (cria cannot run
// gpt-oss on this branch): names, shapes and types as llama.cpp's converter
// writes them, the MXFP4 experts repacked without loss into ggml's block
// layout (checked by decoding both formats independently and on one block
// byte by byte), gate/up rows and biases de-interleaved, the metadata keys in
// llama.cpp's order, and clear errors for broken MXFP4 pairs.

#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint_writer.h"
#include "cria/convert/convert.h"
#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/quant/quantize.h"

namespace cria::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_checkpoint::Tensor;
using test_checkpoint::random_f32;
using test_checkpoint::random_u8;

constexpr uint64_t kVocab = 4096, kEmbd = 64, kFf = 96, kExperts = 4, kHeads = 4;

json gpt_oss_config(bool mxfp4, uint64_t ff = kFf) {
    json c = {{"architectures", {"GptOssForCausalLM"}}, {"vocab_size", kVocab}, {"hidden_size", kEmbd},
              {"intermediate_size", ff}, {"num_hidden_layers", 2}, {"num_attention_heads", kHeads},
              {"num_key_value_heads", 2}, {"head_dim", 16}, {"max_position_embeddings", 4096},
              {"rms_norm_eps", 1e-5}, {"rope_theta", 150000.0}, {"sliding_window", 16},
              {"num_local_experts", kExperts}, {"num_experts_per_tok", 2}, {"experts_per_token", 2},
              {"tie_word_embeddings", false},
              {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                                {"truncate", false}, {"original_max_position_embeddings", 128}}}};
    if (mxfp4) c["quantization_config"] = {{"quant_method", "mxfp4"}};
    return c;
}

// Random MXFP4 experts: scales near 2^0 so the values stay reasonable.
std::vector<Tensor> gpt_oss_tensors(bool mxfp4, uint64_t ff = kFf) {
    uint32_t seed = 1;
    std::vector<Tensor> t = {random_f32("model.embed_tokens.weight", {kVocab, kEmbd}, seed++),
                             random_f32("model.norm.weight", {kEmbd}, seed++),
                             random_f32("lm_head.weight", {kVocab, kEmbd}, seed++)};
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        t.push_back(random_f32(p + "input_layernorm.weight", {kEmbd}, seed++));
        t.push_back(random_f32(p + "post_attention_layernorm.weight", {kEmbd}, seed++));
        for (const auto& [proj, rows] : {std::pair{"q_proj", 64}, std::pair{"k_proj", 32}, std::pair{"v_proj", 32}}) {
            t.push_back(random_f32(p + "self_attn." + proj + ".weight", {static_cast<uint64_t>(rows), kEmbd}, seed++));
            t.push_back(random_f32(p + "self_attn." + proj + ".bias", {static_cast<uint64_t>(rows)}, seed++));
        }
        t.push_back(random_f32(p + "self_attn.o_proj.weight", {kEmbd, 64}, seed++));
        t.push_back(random_f32(p + "self_attn.o_proj.bias", {kEmbd}, seed++));
        t.push_back(random_f32(p + "self_attn.sinks", {kHeads}, seed++));
        t.push_back(random_f32(p + "mlp.router.weight", {kExperts, kEmbd}, seed++));
        t.push_back(random_f32(p + "mlp.router.bias", {kExperts}, seed++));
        t.push_back(random_f32(p + "mlp.experts.gate_up_proj_bias", {kExperts, 2 * ff}, seed++));
        t.push_back(random_f32(p + "mlp.experts.down_proj_bias", {kExperts, kEmbd}, seed++));
        if (mxfp4) {
            t.push_back(random_u8(p + "mlp.experts.gate_up_proj_blocks", {kExperts, 2 * ff, kEmbd / 32, 16}, seed++));
            t.push_back(random_u8(p + "mlp.experts.gate_up_proj_scales", {kExperts, 2 * ff, kEmbd / 32}, seed++, 120, 130));
            t.push_back(random_u8(p + "mlp.experts.down_proj_blocks", {kExperts, kEmbd, ff / 32, 16}, seed++));
            t.push_back(random_u8(p + "mlp.experts.down_proj_scales", {kExperts, kEmbd, ff / 32}, seed++, 120, 130));
        } else {
            t.push_back(random_f32(p + "mlp.experts.gate_up_proj", {kExperts, kEmbd, 2 * ff}, seed++));
            t.push_back(random_f32(p + "mlp.experts.down_proj", {kExperts, ff, kEmbd}, seed++));
        }
    }
    return t;
}

const Tensor& by_name(const std::vector<Tensor>& ts, const std::string& name) {
    for (const Tensor& t : ts)
        if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
}

std::unique_ptr<gguf::File> convert_dir(const fs::path& dir, ElementType type) {
    const std::string out = (dir / "out.gguf").string();
    convert(dir, out, {type, "tiny"});
    return gguf::File::open(out);
}

std::vector<float> as_floats(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) throw std::runtime_error("missing " + name);
    std::vector<float> v(t->n_elements());
    const auto bytes = f.tensor_data(*t);
    const size_t row = *row_size_bytes(t->type, t->ne[0]);
    for (uint64_t r = 0; r < t->n_elements() / t->ne[0]; ++r)
        quant::dequantize_row(t->type, bytes.data() + r * row, v.data() + r * t->ne[0], static_cast<int64_t>(t->ne[0]));
    return v;
}

// The checkpoint's MXFP4, decoded from OpenAI's description: value c of a row
// is FP4 E2M1 code (low nibble of byte c/2 for even c, high for odd) times
// 2^(scale - 127), one scale per 32 values.
float openai_mxfp4(const Tensor& blocks, const Tensor& scales, uint64_t matrix, uint64_t row, uint64_t col) {
    static const float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    const uint64_t n_blocks = blocks.shape[2], rows = blocks.shape[1];
    const uint64_t block = (matrix * rows + row) * n_blocks + col / 32, in_block = col % 32;
    const uint8_t byte = blocks.bytes[block * 16 + in_block / 2];
    const uint8_t code = in_block % 2 == 0 ? byte & 0x0F : byte >> 4;
    return std::ldexp(kE2M1[code], static_cast<int>(scales.bytes[block]) - 127);
}

TEST(ConvertGptOss, NamesShapesAndTypes) {
    const auto tensors = gpt_oss_tensors(true);
    auto f = convert_dir(test_checkpoint::make_dir("gpt-oss-mxfp4", gpt_oss_config(true), tensors), ElementType::F16);
    EXPECT_EQ(f->architecture(), "gpt-oss");
    struct Want {
        const char* name;
        ElementType type;
        std::array<uint64_t, 4> ne;
    };
    using E = ElementType;
    for (const Want& w : std::initializer_list<Want>{
             {"token_embd.weight", E::F16, {kEmbd, kVocab, 1, 1}},
             {"output_norm.weight", E::F32, {kEmbd, 1, 1, 1}},
             {"output.weight", E::F16, {kEmbd, kVocab, 1, 1}},
             {"blk.1.attn_norm.weight", E::F32, {kEmbd, 1, 1, 1}},
             {"blk.1.post_attention_norm.weight", E::F32, {kEmbd, 1, 1, 1}},
             {"blk.1.attn_q.weight", E::F16, {kEmbd, 64, 1, 1}},
             {"blk.1.attn_q.bias", E::F32, {64, 1, 1, 1}},
             {"blk.1.attn_output.bias", E::F32, {kEmbd, 1, 1, 1}},
             {"blk.1.attn_sinks.weight", E::F32, {kHeads, 1, 1, 1}},
             {"blk.1.ffn_gate_inp.weight", E::F32, {kEmbd, kExperts, 1, 1}},
             {"blk.1.ffn_gate_inp.bias", E::F32, {kExperts, 1, 1, 1}},
             {"blk.1.ffn_gate_exps.weight", E::MXFP4, {kEmbd, kFf, kExperts, 1}},
             {"blk.1.ffn_up_exps.weight", E::MXFP4, {kEmbd, kFf, kExperts, 1}},
             {"blk.1.ffn_down_exps.weight", E::MXFP4, {kFf, kEmbd, kExperts, 1}},
             {"blk.1.ffn_gate_exps.bias", E::F32, {kFf, kExperts, 1, 1}},
             {"blk.1.ffn_up_exps.bias", E::F32, {kFf, kExperts, 1, 1}},
             {"blk.1.ffn_down_exps.bias", E::F32, {kEmbd, kExperts, 1, 1}},
         }) {
        const gguf::TensorInfo* t = f->find_tensor(w.name);
        ASSERT_NE(t, nullptr) << w.name;
        EXPECT_EQ(t->type, w.type) << w.name << ": " << element_type_name(t->type);
        EXPECT_EQ(t->ne, w.ne) << w.name;
    }
    // Per layer: 2 norms, 4 attention weights and biases, sinks, router weight and
    // bias, 3 expert weights and 3 expert biases; the scales fold into the blocks.
    EXPECT_EQ(f->tensors().size(), 3u + 2 * 19);
    EXPECT_EQ(as_floats(*f, "blk.0.attn_sinks.weight"), by_name(tensors, "model.layers.0.self_attn.sinks").floats());
    EXPECT_EQ(as_floats(*f, "blk.0.ffn_gate_inp.bias"), by_name(tensors, "model.layers.0.mlp.router.bias").floats());
}

TEST(ConvertGptOss, Mxfp4ExpertsRepackedWithoutLoss) {
    const auto tensors = gpt_oss_tensors(true);
    auto f = convert_dir(test_checkpoint::make_dir("gpt-oss-mxfp4-bytes", gpt_oss_config(true), tensors), ElementType::F16);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.", blk = "blk." + std::to_string(l) + ".";
        const Tensor& gu_blocks = by_name(tensors, p + "gate_up_proj_blocks");
        const Tensor& gu_scales = by_name(tensors, p + "gate_up_proj_scales");
        const auto gate = as_floats(*f, blk + "ffn_gate_exps.weight"), up = as_floats(*f, blk + "ffn_up_exps.weight");
        for (uint64_t e = 0; e < kExperts; ++e)
            for (uint64_t r = 0; r < kFf; ++r)
                for (uint64_t c = 0; c < kEmbd; ++c) {
                    const size_t i = (e * kFf + r) * kEmbd + c;
                    // Gate rows are the checkpoint's even rows, up rows the odd ones.
                    ASSERT_EQ(gate[i], openai_mxfp4(gu_blocks, gu_scales, e, 2 * r, c)) << l << " " << e << " " << r << " " << c;
                    ASSERT_EQ(up[i], openai_mxfp4(gu_blocks, gu_scales, e, 2 * r + 1, c)) << l << " " << e << " " << r << " " << c;
                }
        const Tensor& d_blocks = by_name(tensors, p + "down_proj_blocks");
        const Tensor& d_scales = by_name(tensors, p + "down_proj_scales");
        const auto down = as_floats(*f, blk + "ffn_down_exps.weight");
        for (uint64_t e = 0; e < kExperts; ++e)
            for (uint64_t r = 0; r < kEmbd; ++r)
                for (uint64_t c = 0; c < kFf; ++c)
                    ASSERT_EQ(down[(e * kEmbd + r) * kFf + c], openai_mxfp4(d_blocks, d_scales, e, r, c));
    }
    // One block byte by byte: scale first, then value j in the low nibble and
    // value j + 16 in the high nibble of byte 1 + j (llama.cpp's reordering).
    const Tensor& blocks = by_name(tensors, "model.layers.1.mlp.experts.down_proj_blocks");
    const Tensor& scales = by_name(tensors, "model.layers.1.mlp.experts.down_proj_scales");
    const gguf::TensorInfo& t = *f->find_tensor("blk.1.ffn_down_exps.weight");
    const auto bytes = f->tensor_data(t);
    const uint64_t block = (2 * kEmbd + 5) * (kFf / 32) + 1;  // expert 2, row 5, block 1
    const uint8_t* got = bytes.data() + block * 17;
    EXPECT_EQ(got[0], scales.bytes[block]);
    for (int j = 0; j < 16; ++j) {
        auto code = [&](int v) { return (blocks.bytes[block * 16 + v / 2] >> (4 * (v % 2))) & 0x0F; };
        EXPECT_EQ(got[1 + j], code(j) | (code(j + 16) << 4)) << j;
    }
}

TEST(ConvertGptOss, BiasesSplitIntoGateAndUp) {
    const auto tensors = gpt_oss_tensors(true);
    auto f = convert_dir(test_checkpoint::make_dir("gpt-oss-bias", gpt_oss_config(true), tensors), ElementType::F32);
    const auto src = by_name(tensors, "model.layers.0.mlp.experts.gate_up_proj_bias").floats();
    const auto gate = as_floats(*f, "blk.0.ffn_gate_exps.bias"), up = as_floats(*f, "blk.0.ffn_up_exps.bias");
    for (uint64_t e = 0; e < kExperts; ++e)
        for (uint64_t i = 0; i < kFf; ++i) {
            EXPECT_EQ(gate[e * kFf + i], src[e * 2 * kFf + 2 * i]);
            EXPECT_EQ(up[e * kFf + i], src[e * 2 * kFf + 2 * i + 1]);
        }
    EXPECT_EQ(as_floats(*f, "blk.0.ffn_down_exps.bias"), by_name(tensors, "model.layers.0.mlp.experts.down_proj_bias").floats());
}

TEST(ConvertGptOss, MetadataAsLlamaCppWritesIt) {
    auto dir = test_checkpoint::make_dir("gpt-oss-meta", gpt_oss_config(true), gpt_oss_tensors(true));
    auto f = convert_dir(dir, ElementType::F16);
    // Expected keys in order (the tokenizer follows).
    const std::vector<std::pair<std::string, std::string>> want = {
        {"general.architecture", "gpt-oss"},
        {"general.type", "model"},
        {"general.name", "tiny"},
        {"general.size_label", ""},
        {"gpt-oss.block_count", "2"},
        {"gpt-oss.context_length", "4096"},
        {"gpt-oss.embedding_length", "64"},
        {"gpt-oss.feed_forward_length", "96"},
        {"gpt-oss.attention.head_count", "4"},
        {"gpt-oss.attention.head_count_kv", "2"},
        {"gpt-oss.rope.scaling.type", "yarn"},
        {"gpt-oss.rope.scaling.factor", "32"},
        {"gpt-oss.rope.scaling.original_context_length", "128"},
        {"gpt-oss.rope.scaling.yarn_beta_fast", "32"},
        {"gpt-oss.rope.scaling.yarn_beta_slow", "1"},
        {"gpt-oss.rope.freq_base", "150000"},
        {"gpt-oss.attention.layer_norm_rms_epsilon", ""},
        {"gpt-oss.expert_count", "4"},
        {"gpt-oss.expert_used_count", "2"},
        {"gpt-oss.attention.key_length", "16"},
        {"gpt-oss.attention.value_length", "16"},
        {"general.file_type", "38"},  // MOSTLY_MXFP4_MOE: the experts stay MXFP4
        {"gpt-oss.attention.sliding_window", "16"},
        {"gpt-oss.expert_feed_forward_length", "96"},
        {"general.quantization_version", "2"},
    };
    const auto& md = f->metadata();
    ASSERT_GE(md.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(md[i].first, want[i].first) << i;
        if (!want[i].second.empty() && md[i].first == want[i].first) {
            const std::string shown = md[i].second.to_display_string();
            EXPECT_TRUE(shown == want[i].second || shown == "\"" + want[i].second + "\"") << want[i].first << ": " << shown;
        }
    }
    EXPECT_EQ(f->get_f32("gpt-oss.attention.layer_norm_rms_epsilon"), 1e-5f);
    // Experts: 3 stacked weights (4 x 64 x 96 each) and 3 biases per layer count once per expert.
    const uint64_t per_expert = 2 * (3 * kEmbd * kFf + 2 * kFf + kEmbd);
    const uint64_t shared = 2 * kVocab * kEmbd + kEmbd +
                            2 * (2 * kEmbd + (64 + 32 + 32) * (kEmbd + 1) + kEmbd * 64 + kEmbd + kHeads +
                                 kExperts * kEmbd + kExperts);
    EXPECT_EQ(f->get_string("general.size_label"), "4x" + size_label(shared + per_expert));
    // A q8_0 conversion keeps the experts MXFP4 and says q8_0.
    auto q = convert_dir(dir, ElementType::Q8_0);
    EXPECT_EQ(q->get_u32("general.file_type"), 7u);
    EXPECT_EQ(q->find_tensor("blk.0.ffn_up_exps.weight")->type, ElementType::MXFP4);
    EXPECT_EQ(q->find_tensor("blk.0.attn_k.weight")->type, ElementType::Q8_0);
}

TEST(ConvertGptOss, Bf16ExpertsAreTransposedAndSplit) {
    const auto tensors = gpt_oss_tensors(false);
    auto f = convert_dir(test_checkpoint::make_dir("gpt-oss-dense", gpt_oss_config(false), tensors), ElementType::F32);
    EXPECT_EQ(f->get_u32("general.file_type"), 0u);
    const auto gu = by_name(tensors, "model.layers.1.mlp.experts.gate_up_proj").floats();  // [E, in, 2F]
    const auto down = by_name(tensors, "model.layers.1.mlp.experts.down_proj").floats();   // [E, F, in]
    const auto gate = as_floats(*f, "blk.1.ffn_gate_exps.weight"), up = as_floats(*f, "blk.1.ffn_up_exps.weight");
    const auto got_down = as_floats(*f, "blk.1.ffn_down_exps.weight");
    EXPECT_EQ(f->find_tensor("blk.1.ffn_down_exps.weight")->ne, (std::array<uint64_t, 4>{kFf, kEmbd, kExperts, 1}));
    for (uint64_t e = 0; e < kExperts; ++e) {
        for (uint64_t r = 0; r < kFf; ++r)
            for (uint64_t c = 0; c < kEmbd; ++c) {
                ASSERT_EQ(gate[(e * kFf + r) * kEmbd + c], gu[(e * kEmbd + c) * 2 * kFf + 2 * r]);
                ASSERT_EQ(up[(e * kFf + r) * kEmbd + c], gu[(e * kEmbd + c) * 2 * kFf + 2 * r + 1]);
            }
        for (uint64_t r = 0; r < kEmbd; ++r)
            for (uint64_t c = 0; c < kFf; ++c) ASSERT_EQ(got_down[(e * kEmbd + r) * kFf + c], down[(e * kFf + c) * kEmbd + r]);
    }
}

TEST(ConvertGptOss, BrokenMxfp4PairsAreErrors) {
    auto check = [](const std::string& name, std::vector<Tensor> tensors, const std::string& part) {
        try {
            convert_dir(test_checkpoint::make_dir(name, gpt_oss_config(true), tensors), ElementType::F16);
            ADD_FAILURE() << name << ": no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << name << ": " << e.what();
        }
    };
    auto no_scales = gpt_oss_tensors(true);
    std::erase_if(no_scales, [](const Tensor& t) { return t.name == "model.layers.1.mlp.experts.down_proj_scales"; });
    check("no-scales", no_scales, "has no 'model.layers.1.mlp.experts.down_proj_scales'");
    auto no_blocks = gpt_oss_tensors(true);
    std::erase_if(no_blocks, [](const Tensor& t) { return t.name == "model.layers.0.mlp.experts.gate_up_proj_blocks"; });
    check("no-blocks", no_blocks, "has no '_blocks' tensor");
    auto wrong_scales = gpt_oss_tensors(true);
    for (Tensor& t : wrong_scales)
        if (t.name == "model.layers.0.mlp.experts.gate_up_proj_scales") t = random_u8(t.name, {kExperts, 2 * kFf, 3}, 1);
    check("wrong-scales", wrong_scales, "need [4, 192, 2]");
    auto float_blocks = gpt_oss_tensors(true);
    for (Tensor& t : float_blocks)
        if (t.name == "model.layers.0.mlp.experts.down_proj_blocks") t = random_f32(t.name, {kExperts, kEmbd, kFf / 32, 16}, 1);
    check("float-blocks", float_blocks, "must be U8");
    auto wrong_experts = gpt_oss_tensors(true);
    for (Tensor& t : wrong_experts)
        if (t.name == "model.layers.1.mlp.experts.down_proj_bias") t = random_f32(t.name, {kExperts + 1, kEmbd}, 1);
    check("wrong-experts", wrong_experts, "need [4, n]");
}

TEST(ConvertGptOss, O200kPreTokenizerIsGpt4o) {
    auto dir = test_checkpoint::make_dir("gpt-oss-o200k", gpt_oss_config(true), gpt_oss_tensors(true));
    json tj;
    std::ifstream(dir / "tokenizer.json") >> tj;
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    std::ofstream(dir / "tokenizer.json") << tj.dump();
    auto f = convert_dir(dir, ElementType::F16);
    EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "gpt-4o");
}

// The same names, shapes and types as the gpt-oss file llama.cpp itself wrote
// (the arch fixture, 64 wide with 4 experts of 64), apart from the vocabulary
// size and the per-tensor .scale/.input_scale tensors llama.cpp creates for
// every optional slot.
TEST(ConvertGptOss, MatchesLlamaCppFixtureLayout) {
    const auto dir_fixtures = test::arch_fixtures_dir();
    if (dir_fixtures.empty()) GTEST_SKIP() << "arch fixtures not found";
    auto fixture = gguf::File::open((dir_fixtures / "gpt-oss-moe.gguf").string());
    auto f = convert_dir(test_checkpoint::make_dir("gpt-oss-fixture-dims", gpt_oss_config(true, 64), gpt_oss_tensors(true, 64)),
                         ElementType::F32);
    size_t n_matched = 0;
    for (const gguf::TensorInfo& want : fixture->tensors()) {
        const gguf::TensorInfo* got = f->find_tensor(want.name);
        if (want.name.ends_with(".scale") || want.name.ends_with(".input_scale")) {
            EXPECT_EQ(got, nullptr) << want.name;
            continue;
        }
        ASSERT_NE(got, nullptr) << want.name << " is missing";
        ++n_matched;
        auto ne = want.ne;
        if (want.name == "token_embd.weight" || want.name == "output.weight") ne[1] = kVocab;
        EXPECT_EQ(got->ne, ne) << want.name;
        EXPECT_EQ(got->n_dims, want.n_dims) << want.name;
        // The fixture is all f32; the converter's f32 file too, except the MXFP4 experts.
        EXPECT_EQ(got->type, want.name.find("_exps.weight") != std::string::npos ? ElementType::MXFP4 : ElementType::F32)
            << want.name;
    }
    EXPECT_EQ(n_matched, f->tensors().size());
    for (const char* key : {"gpt-oss.expert_count", "gpt-oss.expert_used_count", "gpt-oss.expert_feed_forward_length",
                            "gpt-oss.attention.head_count", "gpt-oss.attention.head_count_kv",
                            "gpt-oss.attention.key_length", "gpt-oss.embedding_length", "gpt-oss.block_count"})
        EXPECT_EQ(f->get_u32(key), fixture->get_u32(key)) << key;
}

}  // namespace
}  // namespace cria::convert
