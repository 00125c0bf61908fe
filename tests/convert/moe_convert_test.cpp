// Converting mixture-of-experts checkpoints (Qwen3MoeForCausalLM,
// MixtralForCausalLM): per-expert tensors stacked into blk.L.ffn_*_exps with
// expert e at outer index e, the router kept f32, llama.cpp's metadata keys in
// llama.cpp's order, clear errors for incomplete experts; and, as a known-good
// path, a checkpoint whose experts are all one dense MLP gives the logits of
// the dense model it was made from (the routing weights sum to 1).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "checkpoint_writer.h"
#include "cria/convert/convert.h"
#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/reference_forward.h"

namespace cria::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_checkpoint::Tensor;
using test_checkpoint::random_f32;

constexpr uint64_t kVocab = 4096, kEmbd = 64, kFf = 32, kExperts = 4;

struct Spec {
    std::string hf_class;
    bool qk_norm;            // Qwen3: per-head q/k norms
    std::string expert_fmt;  // "mlp.experts.{e}.{w}" names: gate, up, down projections
    std::array<const char*, 3> projections;
    std::string router;
    std::string dense_class;
};

const Spec kQwen3Moe{"Qwen3MoeForCausalLM", true, "mlp.experts.", {"gate_proj", "up_proj", "down_proj"}, "mlp.gate",
                     "Qwen3ForCausalLM"};
const Spec kMixtral{"MixtralForCausalLM", false, "block_sparse_moe.experts.", {"w1", "w3", "w2"},
                    "block_sparse_moe.gate", "LlamaForCausalLM"};

json config_for(const Spec& s, bool moe, uint64_t ff = kFf) {
    json c = {{"architectures", {moe ? s.hf_class : s.dense_class}}, {"vocab_size", kVocab}, {"hidden_size", kEmbd},
              {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16},
              {"max_position_embeddings", 256}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0},
              {"tie_word_embeddings", false}};
    c["intermediate_size"] = moe && s.hf_class == "Qwen3MoeForCausalLM" ? 96 : ff;
    if (moe) {
        if (s.hf_class == "Qwen3MoeForCausalLM") {
            c["num_experts"] = kExperts;
            c["moe_intermediate_size"] = ff;
            c["norm_topk_prob"] = true;
        } else {
            c["num_local_experts"] = kExperts;
        }
        c["num_experts_per_tok"] = 2;
    }
    return c;
}

// Embeddings, attention and norms, the same for the dense and MoE variants.
std::vector<Tensor> shared_tensors(const Spec& s) {
    uint32_t seed = 1;
    std::vector<Tensor> t = {random_f32("model.embed_tokens.weight", {kVocab, kEmbd}, seed++),
                             random_f32("model.norm.weight", {kEmbd}, seed++),
                             random_f32("lm_head.weight", {kVocab, kEmbd}, seed++, 0.1f)};
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        t.push_back(random_f32(p + "input_layernorm.weight", {kEmbd}, seed++));
        t.push_back(random_f32(p + "post_attention_layernorm.weight", {kEmbd}, seed++));
        t.push_back(random_f32(p + "self_attn.q_proj.weight", {64, kEmbd}, seed++, 0.2f));
        t.push_back(random_f32(p + "self_attn.k_proj.weight", {32, kEmbd}, seed++, 0.2f));
        t.push_back(random_f32(p + "self_attn.v_proj.weight", {32, kEmbd}, seed++, 0.2f));
        t.push_back(random_f32(p + "self_attn.o_proj.weight", {kEmbd, 64}, seed++, 0.2f));
        if (s.qk_norm) {
            t.push_back(random_f32(p + "self_attn.q_norm.weight", {16}, seed++));
            t.push_back(random_f32(p + "self_attn.k_norm.weight", {16}, seed++));
        }
    }
    return t;
}

std::array<Tensor, 3> dense_mlp(int layer, uint64_t ff = kFf) {
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    const uint32_t seed = 100 + 10 * static_cast<uint32_t>(layer);
    return {random_f32(p + "gate_proj.weight", {ff, kEmbd}, seed, 0.2f),
            random_f32(p + "up_proj.weight", {ff, kEmbd}, seed + 1, 0.2f),
            random_f32(p + "down_proj.weight", {kEmbd, ff}, seed + 2, 0.2f)};
}

// The MoE checkpoint: a router per layer and kExperts experts. With
// `copies_of_dense`, every expert is the dense MLP of dense_mlp(); otherwise
// each expert is random. Experts are listed last layer first and in reverse
// expert order, so that the stacking cannot rely on the file's order.
std::vector<Tensor> moe_tensors(const Spec& s, bool copies_of_dense, uint64_t ff = kFf) {
    std::vector<Tensor> t = shared_tensors(s);
    for (int l = 1; l >= 0; --l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        t.push_back(random_f32(p + s.router + ".weight", {kExperts, kEmbd}, 200 + static_cast<uint32_t>(l)));
        const auto dense = dense_mlp(l, ff);
        for (int e = static_cast<int>(kExperts) - 1; e >= 0; --e)
            for (int w = 0; w < 3; ++w) {
                Tensor x = copies_of_dense ? dense[w]
                                           : random_f32("", dense[w].shape, 1000 + 100 * l + 10 * e + w, 0.2f);
                x.name = p + s.expert_fmt + std::to_string(e) + "." + s.projections[w] + ".weight";
                t.push_back(std::move(x));
            }
    }
    return t;
}

std::vector<float> floats(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) throw std::runtime_error("missing " + name);
    const auto bytes = f.tensor_data(*t);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

const Tensor& by_name(const std::vector<Tensor>& ts, const std::string& name) {
    for (const Tensor& t : ts)
        if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
}

std::unique_ptr<gguf::File> convert_dir(const fs::path& dir, ElementType type = ElementType::F32) {
    const std::string out = (dir / "out.gguf").string();
    convert(dir, out, {type, "tiny"});
    return gguf::File::open(out);
}

size_t key_index(const gguf::File& f, const std::string& key) {
    const auto& md = f.metadata();
    for (size_t i = 0; i < md.size(); ++i)
        if (md[i].first == key) return i;
    ADD_FAILURE() << "no key " << key;
    return SIZE_MAX;
}

void check_stacked(const Spec& s, const char* arch) {
    const auto tensors = moe_tensors(s, false);
    auto f = convert_dir(test_checkpoint::make_dir(s.hf_class + "-stacked", config_for(s, true), tensors));
    EXPECT_EQ(f->architecture(), arch);
    const char* roles[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
    for (int l = 0; l < 2; ++l) {
        const std::string blk = "blk." + std::to_string(l) + ".";
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (int w = 0; w < 3; ++w) {
            const gguf::TensorInfo* t = f->find_tensor(blk + roles[w] + ".weight");
            ASSERT_NE(t, nullptr) << roles[w];
            const std::array<uint64_t, 4> want = w == 2 ? std::array<uint64_t, 4>{kFf, kEmbd, kExperts, 1}
                                                        : std::array<uint64_t, 4>{kEmbd, kFf, kExperts, 1};
            EXPECT_EQ(t->ne, want) << roles[w];
            EXPECT_EQ(t->n_dims, 3u);
            const auto got = floats(*f, blk + roles[w] + ".weight");
            const size_t per_expert = kFf * kEmbd;
            for (uint64_t e = 0; e < kExperts; ++e) {
                const auto src = by_name(tensors, p + s.expert_fmt + std::to_string(e) + "." + s.projections[w] + ".weight").floats();
                EXPECT_TRUE(std::equal(src.begin(), src.end(), got.begin() + static_cast<ptrdiff_t>(e * per_expert)))
                    << roles[w] << " expert " << e;
            }
        }
        EXPECT_EQ(floats(*f, blk + "ffn_gate_inp.weight"), by_name(tensors, p + s.router + ".weight").floats());
        EXPECT_EQ(f->find_tensor(blk + "ffn_gate_inp.weight")->ne, (std::array<uint64_t, 4>{kEmbd, kExperts, 1, 1}));
    }
    // Within a block: router, then the experts gate/up/down, after the FFN norm.
    std::vector<std::string> names;
    for (const auto& t : f->tensors())
        if (t.name.starts_with("blk.1.")) names.push_back(t.name);
    const auto pos = [&](const std::string& n) { return std::find(names.begin(), names.end(), "blk.1." + n) - names.begin(); };
    EXPECT_LT(pos("ffn_norm.weight"), pos("ffn_gate_inp.weight"));
    EXPECT_LT(pos("ffn_gate_inp.weight"), pos("ffn_gate_exps.weight"));
    EXPECT_LT(pos("ffn_gate_exps.weight"), pos("ffn_up_exps.weight"));
    EXPECT_LT(pos("ffn_up_exps.weight"), pos("ffn_down_exps.weight"));
    EXPECT_EQ(f->tensors().front().name, "token_embd.weight");
    EXPECT_EQ(f->tensors().back().name, "output.weight");

    // Metadata: expert counts right after the norm epsilon, as TextModel writes them.
    const std::string A = arch;
    EXPECT_EQ(f->get_u32(A + ".expert_count"), kExperts);
    EXPECT_EQ(f->get_u32(A + ".expert_used_count"), 2u);
    EXPECT_EQ(key_index(*f, A + ".expert_count"), key_index(*f, A + ".attention.layer_norm_rms_epsilon") + 1);
    EXPECT_EQ(key_index(*f, A + ".expert_used_count"), key_index(*f, A + ".expert_count") + 1);
    EXPECT_EQ(key_index(*f, A + ".attention.key_length"), key_index(*f, A + ".expert_used_count") + 1);
    // gguf-py's size label for experts: count x (shared + one expert's parameters).
    const uint64_t expert = 2 * 3 * kFf * kEmbd, shared_per_layer = 2 * kEmbd + 64 * kEmbd * 2 + 32 * kEmbd * 2 +
                                                                    kExperts * kEmbd + (s.qk_norm ? 32 : 0);
    const uint64_t shared = 2 * kVocab * kEmbd + kEmbd + 2 * shared_per_layer;
    EXPECT_EQ(f->get_string("general.size_label"), "4x" + size_label(shared + expert));
    return;
}

TEST(ConvertMoe, Qwen3MoeStacksExperts) {
    check_stacked(kQwen3Moe, "qwen3moe");
    auto f = convert_dir(test::temp_dir() / "Qwen3MoeForCausalLM-stacked");
    EXPECT_EQ(f->get_u32("qwen3moe.expert_feed_forward_length"), kFf);
    EXPECT_EQ(f->get_u32("qwen3moe.feed_forward_length"), 96u);
    EXPECT_EQ(key_index(*f, "qwen3moe.expert_feed_forward_length"), key_index(*f, "general.file_type") + 1);
    EXPECT_NE(f->find_tensor("blk.0.attn_k_norm.weight"), nullptr);
}

TEST(ConvertMoe, MixtralStacksW1W3W2) {
    check_stacked(kMixtral, "llama");
    auto f = convert_dir(test::temp_dir() / "MixtralForCausalLM-stacked");
    EXPECT_EQ(f->get_u32("llama.vocab_size"), kVocab);
    EXPECT_EQ(f->get_u32("llama.rope.dimension_count"), 16u);
    EXPECT_EQ(f->find("llama.expert_feed_forward_length"), nullptr);
}

TEST(ConvertMoe, RouterStaysF32AndExpertsTakeTheOuttype) {
    auto dir = test_checkpoint::make_dir("qwen3moe-types", config_for(kQwen3Moe, true), moe_tensors(kQwen3Moe, false));
    for (ElementType type : {ElementType::F16, ElementType::Q8_0, ElementType::BF16}) {
        auto f = convert_dir(dir, type);
        EXPECT_EQ(f->find_tensor("blk.0.ffn_gate_inp.weight")->type, ElementType::F32);
        EXPECT_EQ(f->find_tensor("blk.0.ffn_down_exps.weight")->type, type);
        EXPECT_EQ(f->find_tensor("blk.1.ffn_up_exps.weight")->type, type);
        EXPECT_EQ(f->find_tensor("blk.1.attn_q.weight")->type, type);
        EXPECT_EQ(f->find_tensor("blk.1.attn_q_norm.weight")->type, ElementType::F32);
    }
}

// The known-good path: experts that are all the dense MLP, routed with weights
// summing to 1, compute exactly the dense model.
void check_equals_dense(const Spec& s) {
    std::vector<Tensor> dense = shared_tensors(s);
    for (int l = 0; l < 2; ++l)
        for (Tensor& t : dense_mlp(l)) dense.push_back(std::move(t));
    auto moe_file = convert_dir(test_checkpoint::make_dir(s.hf_class + "-copies", config_for(s, true), moe_tensors(s, true)));
    auto dense_file = convert_dir(test_checkpoint::make_dir(s.hf_class + "-dense", config_for(s, false), dense));
    const std::vector<int32_t> tokens = {72, 101, 332, 5, 900, 17};
    const auto a = model::reference_forward(*moe_file, tokens);
    const auto b = model::reference_forward(*dense_file, tokens);
    ASSERT_EQ(a.size(), b.size());
    double err = 0, norm = 0;
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t v = 0; v < a[i].size(); ++v) {
            err += (a[i][v] - b[i][v]) * double(a[i][v] - b[i][v]);
            norm += b[i][v] * double(b[i][v]);
        }
    EXPECT_GT(norm, 0.0);
    EXPECT_LT(err / norm, 1e-10) << s.hf_class;
}

TEST(ConvertMoe, Qwen3MoeWithIdenticalExpertsIsTheDenseModel) { check_equals_dense(kQwen3Moe); }
TEST(ConvertMoe, MixtralWithIdenticalExpertsIsTheDenseModel) { check_equals_dense(kMixtral); }

void expect_error(const std::string& name, const json& config, const std::vector<Tensor>& tensors,
                  const std::string& part) {
    try {
        convert_dir(test_checkpoint::make_dir(name, config, tensors));
        ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << name << ": " << e.what();
    }
}

TEST(ConvertMoe, IncompleteOrInconsistentExpertsAreErrors) {
    auto tensors = moe_tensors(kQwen3Moe, false);
    auto missing = tensors;
    std::erase_if(missing, [](const Tensor& t) { return t.name == "model.layers.1.mlp.experts.2.up_proj.weight"; });
    expect_error("missing-expert", config_for(kQwen3Moe, true), missing, "no tensor for expert 2 of ffn_up_exps");
    auto extra = tensors;
    extra.push_back(random_f32("model.layers.0.mlp.experts.4.up_proj.weight", {kFf, kEmbd}, 9));
    expect_error("extra-expert", config_for(kQwen3Moe, true), extra, "expert 4, but config.json has 4 experts");
    auto misshaped = tensors;
    for (Tensor& t : misshaped)
        if (t.name == "model.layers.0.mlp.experts.1.down_proj.weight") t = random_f32(t.name, {kEmbd, kFf + 1}, 3);
    expect_error("misshaped-expert", config_for(kQwen3Moe, true), misshaped, "other experts of layer 0");
    json no_count = config_for(kQwen3Moe, true);
    no_count.erase("num_experts");
    expect_error("no-expert-count", no_count, tensors, "needs num_experts");
    json too_many_used = config_for(kMixtral, true);
    too_many_used["num_experts_per_tok"] = 5;
    expect_error("too-many-used", too_many_used, moe_tensors(kMixtral, false), "num_experts_per_tok");
}

// transformers 5 saves Qwen3-MoE experts fused: gate_up_proj [E, 2F, n_embd]
// (gate rows, then up rows) and down_proj [E, n_embd, F]. Same GGUF as the
// per-expert checkpoint, byte for byte.
TEST(ConvertMoe, Qwen3MoeFusedExpertsEqualPerExpert) {
    const auto per_expert = moe_tensors(kQwen3Moe, false);
    std::vector<Tensor> fused;
    for (const Tensor& t : per_expert)
        if (t.name.find(".experts.") == std::string::npos) fused.push_back(t);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
        std::vector<float> gate_up, down;
        for (uint64_t e = 0; e < kExperts; ++e) {
            for (const char* w : {"gate_proj", "up_proj"}) {
                const auto v = by_name(per_expert, p + std::to_string(e) + "." + w + ".weight").floats();
                gate_up.insert(gate_up.end(), v.begin(), v.end());
            }
            const auto v = by_name(per_expert, p + std::to_string(e) + ".down_proj.weight").floats();
            down.insert(down.end(), v.begin(), v.end());
        }
        fused.push_back(test_checkpoint::f32(p + "gate_up_proj", {kExperts, 2 * kFf, kEmbd}, gate_up));
        fused.push_back(test_checkpoint::f32(p + "down_proj" + (l == 0 ? ".weight" : ""), {kExperts, kEmbd, kFf}, down));
    }
    auto a = convert_dir(test_checkpoint::make_dir("qwen3moe-per-expert", config_for(kQwen3Moe, true), per_expert));
    auto b = convert_dir(test_checkpoint::make_dir("qwen3moe-fused", config_for(kQwen3Moe, true), fused));
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (size_t i = 0; i < a->tensors().size(); ++i) {
        const auto& x = a->tensors()[i];
        const gguf::TensorInfo* y = b->find_tensor(x.name);
        ASSERT_NE(y, nullptr) << x.name;
        EXPECT_EQ(x.ne, y->ne) << x.name;
        const auto bx = a->tensor_data(x), by = b->tensor_data(*y);
        EXPECT_TRUE(std::equal(bx.begin(), bx.end(), by.begin(), by.end())) << x.name;
    }
    // Both forms at once would give each expert tensor twice.
    auto both = per_expert;
    both.push_back(test_checkpoint::f32("model.layers.0.mlp.experts.down_proj", {kExperts, kEmbd, kFf},
                                        std::vector<float>(kExperts * kEmbd * kFf, 0.0f)));
    expect_error("qwen3moe-both", config_for(kQwen3Moe, true), both, "gives tensor 'blk.0.ffn_down_exps.weight' twice");
}

// The same names, shapes and types as the files llama.cpp itself wrote for
// these architectures (the arch fixtures: 64 wide, 4 experts of 64), apart
// from the vocabulary size and the optional tensors llama.cpp creates for
// every slot (biases, .scale/.input_scale) that these checkpoints do not have.
void check_fixture_layout(const Spec& s, const std::string& fixture_name) {
    const auto dir_fixtures = test::arch_fixtures_dir();
    if (dir_fixtures.empty()) GTEST_SKIP() << "arch fixtures not found";
    auto fixture = gguf::File::open((dir_fixtures / fixture_name).string());
    auto f = convert_dir(test_checkpoint::make_dir(s.hf_class + "-fixture-dims", config_for(s, true, 64),
                                                   moe_tensors(s, false, 64)));
    size_t n_matched = 0;
    for (const gguf::TensorInfo& want : fixture->tensors()) {
        const gguf::TensorInfo* got = f->find_tensor(want.name);
        const bool optional = want.name.ends_with(".scale") || want.name.ends_with(".input_scale") ||
                              want.name.ends_with(".bias") || want.name == "rope_freqs.weight";
        if (optional) continue;
        ASSERT_NE(got, nullptr) << want.name << " is missing";
        ++n_matched;
        auto ne = want.ne;
        if (want.name == "token_embd.weight" || want.name == "output.weight") ne[1] = kVocab;
        EXPECT_EQ(got->ne, ne) << want.name;
        EXPECT_EQ(got->n_dims, want.n_dims) << want.name;
        EXPECT_EQ(got->type, want.type) << want.name;
    }
    EXPECT_EQ(n_matched, f->tensors().size());
    const std::string A = fixture->architecture();
    EXPECT_EQ(f->architecture(), A);
    for (const std::string key : {".expert_count", ".expert_used_count", ".attention.head_count",
                                  ".attention.head_count_kv", ".attention.key_length", ".embedding_length", ".block_count"})
        EXPECT_EQ(f->get_u32(A + key), fixture->get_u32(A + key)) << key;
}

// End to end against llama.cpp's logits: llama.cpp's qwen3moe fixture written
// back as the Hugging Face checkpoint it stands for (per-expert tensors, HF
// names; its `.scale` multipliers folded into their matrices, the vocabulary
// padded with zero rows to the 4096 tokens of the bundled tokenizer), then
// converted. The float64 reference forward pass over the converted file must
// give llama.cpp's logits for the fixture's 48 tokens.
TEST(ConvertMoe, Qwen3MoeFromLlamaCppFixtureGivesItsLogits) {
    const auto dir_fixtures = test::arch_fixtures_dir();
    if (dir_fixtures.empty()) GTEST_SKIP() << "arch fixtures not found";
    auto fx = gguf::File::open((dir_fixtures / "qwen3moe-moe.gguf").string());
    json want;
    std::ifstream(dir_fixtures / "qwen3moe-moe.json") >> want;
    const uint64_t n_vocab = want["n_vocab"].get<uint64_t>(), ff = fx->get_u32("qwen3moe.expert_feed_forward_length").value();
    auto values = [&](const std::string& name) { return floats(*fx, name); };
    auto scaled = [&](const std::string& name, float s) {
        auto v = values(name);
        for (float& x : v) x *= s;
        return v;
    };
    std::vector<Tensor> t;
    for (const auto& [gguf_name, hf_name] : {std::pair{"token_embd.weight", "model.embed_tokens.weight"},
                                             std::pair{"output.weight", "lm_head.weight"}}) {
        auto v = values(gguf_name);
        v.resize(kVocab * kEmbd, 0.0f);
        t.push_back(test_checkpoint::f32(hf_name, {kVocab, kEmbd}, v));
    }
    t.push_back(test_checkpoint::f32("model.norm.weight", {kEmbd}, values("output_norm.weight")));
    for (int l = 0; l < 2; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".", p = "model.layers." + std::to_string(l) + ".";
        for (const auto& [g, h] : {std::pair{"attn_norm", "input_layernorm"}, std::pair{"ffn_norm", "post_attention_layernorm"},
                                   std::pair{"attn_q_norm", "self_attn.q_norm"}, std::pair{"attn_k_norm", "self_attn.k_norm"}}) {
            const gguf::TensorInfo& info = *fx->find_tensor(b + g + ".weight");
            t.push_back(test_checkpoint::f32(p + h + ".weight", {info.ne[0]}, values(b + g + ".weight")));
        }
        for (const auto& [g, h] : {std::pair{"attn_q", "self_attn.q_proj"}, std::pair{"attn_k", "self_attn.k_proj"},
                                   std::pair{"attn_v", "self_attn.v_proj"}, std::pair{"attn_output", "self_attn.o_proj"}}) {
            const gguf::TensorInfo& info = *fx->find_tensor(b + g + ".weight");
            const float s = fx->find_tensor(b + g + ".scale") ? values(b + g + ".scale")[0] : 1.0f;
            t.push_back(test_checkpoint::f32(p + h + ".weight", {info.ne[1], info.ne[0]}, scaled(b + g + ".weight", s)));
            if (fx->find_tensor(b + g + ".bias"))
                t.push_back(test_checkpoint::f32(p + h + ".bias", {info.ne[1]}, values(b + g + ".bias")));
        }
        t.push_back(test_checkpoint::f32(p + "mlp.gate.weight", {kExperts, kEmbd}, values(b + "ffn_gate_inp.weight")));
        for (const auto& [g, h] : {std::pair{"ffn_gate_exps", "gate_proj"}, std::pair{"ffn_up_exps", "up_proj"},
                                   std::pair{"ffn_down_exps", "down_proj"}}) {
            const gguf::TensorInfo& info = *fx->find_tensor(b + g + ".weight");
            const auto w = values(b + g + ".weight");
            const auto s = fx->find_tensor(b + g + ".scale") ? values(b + g + ".scale") : std::vector<float>(kExperts, 1.0f);
            const uint64_t per = info.ne[0] * info.ne[1];
            for (uint64_t e = 0; e < kExperts; ++e) {
                std::vector<float> m(w.begin() + static_cast<ptrdiff_t>(e * per), w.begin() + static_cast<ptrdiff_t>((e + 1) * per));
                for (float& x : m) x *= s[e];
                t.push_back(test_checkpoint::f32(p + "mlp.experts." + std::to_string(e) + "." + h + ".weight",
                                                 {info.ne[1], info.ne[0]}, m));
            }
        }
    }
    json config = config_for(kQwen3Moe, true, ff);
    config["max_position_embeddings"] = fx->get_u32("qwen3moe.context_length").value();
    config["rms_norm_eps"] = fx->get_f32("qwen3moe.attention.layer_norm_rms_epsilon").value();
    config["rope_theta"] = fx->get_f32("qwen3moe.rope.freq_base").value();
    config["num_experts_per_tok"] = fx->get_u32("qwen3moe.expert_used_count").value();
    config["attention_bias"] = true;
    auto f = convert_dir(test_checkpoint::make_dir("qwen3moe-from-fixture", config, t));

    const std::vector<int32_t> tokens = want["tokens"].get<std::vector<int32_t>>();
    const auto got = model::reference_forward(*f, tokens);
    const auto& ref = want["logits_prefill_all"];
    ASSERT_EQ(got.size(), ref.size());
    double err = 0, norm = 0;
    for (size_t i = 0; i < got.size(); ++i)
        for (uint64_t v = 0; v < n_vocab; ++v) {
            const double r = ref[i][v].get<double>();
            err += (got[i][v] - r) * (got[i][v] - r);
            norm += r * r;
        }
    const double nmse = err / norm;
    RecordProperty("nmse", std::to_string(nmse));
    std::printf("qwen3moe converted from llama.cpp's fixture: NMSE %.3g against llama.cpp's logits\n", nmse);
    EXPECT_LT(nmse, 1e-4);
}

TEST(ConvertMoe, Qwen3MoeMatchesLlamaCppFixtureLayout) { check_fixture_layout(kQwen3Moe, "qwen3moe-moe.gguf"); }
TEST(ConvertMoe, MixtralMatchesLlamaCppFixtureLayout) { check_fixture_layout(kMixtral, "llama-moe.gguf"); }

}  // namespace
}  // namespace cria::convert
