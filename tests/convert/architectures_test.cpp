// Small hand-made Hugging Face checkpoints of every supported architecture:
// tensor names, transforms (Q/K permutation, Gemma norm + 1, fused Phi-3
// tensors, tied embeddings, Llama 3 rope factors), sharded checkpoints, and
// clear errors for unsupported inputs.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cria/convert/convert.h"
#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "support/test_paths.h"

namespace cria::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Tensor {
    std::string name;
    std::vector<uint64_t> shape;  // PyTorch order
    std::vector<float> data;
};

void write_safetensors(const fs::path& path, const std::vector<Tensor>& tensors) {
    json header = json::object();
    uint64_t offset = 0;
    for (const Tensor& t : tensors) {
        header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size() * 4}}};
        offset += t.data.size() * 4;
    }
    const std::string h = header.dump();
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const Tensor& t : tensors) out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size() * 4));
}

Tensor random_tensor(const std::string& name, std::vector<uint64_t> shape, uint32_t seed) {
    Tensor t{name, shape, {}};
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.5f);
    t.data.resize(n);
    for (float& x : t.data) x = dist(rng);
    return t;
}

// A tiny model: vocab 4096 (the austen tokenizer), width 64, 2 layers, 4 heads
// of 16, 2 KV heads, ffn 96.
struct Builder {
    std::string arch;
    json config;
    std::vector<Tensor> tensors;
    fs::path dir;

    explicit Builder(const std::string& hf_class, const std::string& name) : arch(hf_class) {
        dir = test::temp_dir() / name;
        fs::create_directories(dir);
        config = {{"architectures", {hf_class}}, {"vocab_size", 4096}, {"hidden_size", 64},
                  {"intermediate_size", 96}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                  {"num_key_value_heads", 2}, {"max_position_embeddings", 256}, {"rms_norm_eps", 1e-6},
                  {"rope_theta", 10000.0}, {"tie_word_embeddings", true}};
        uint32_t seed = 1;
        tensors.push_back(random_tensor("model.embed_tokens.weight", {4096, 64}, seed++));
        tensors.push_back(random_tensor("model.norm.weight", {64}, seed++));
        for (int l = 0; l < 2; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            tensors.push_back(random_tensor(p + "input_layernorm.weight", {64}, seed++));
            tensors.push_back(random_tensor(p + "post_attention_layernorm.weight", {64}, seed++));
            tensors.push_back(random_tensor(p + "self_attn.o_proj.weight", {64, 64}, seed++));
            tensors.push_back(random_tensor(p + "mlp.down_proj.weight", {64, 96}, seed++));
            if (hf_class == "Phi3ForCausalLM") {
                tensors.push_back(random_tensor(p + "self_attn.qkv_proj.weight", {128, 64}, seed++));
                tensors.push_back(random_tensor(p + "mlp.gate_up_proj.weight", {192, 64}, seed++));
            } else {
                tensors.push_back(random_tensor(p + "self_attn.q_proj.weight", {64, 64}, seed++));
                tensors.push_back(random_tensor(p + "self_attn.k_proj.weight", {32, 64}, seed++));
                tensors.push_back(random_tensor(p + "self_attn.v_proj.weight", {32, 64}, seed++));
                tensors.push_back(random_tensor(p + "mlp.gate_proj.weight", {96, 64}, seed++));
                tensors.push_back(random_tensor(p + "mlp.up_proj.weight", {96, 64}, seed++));
            }
        }
        for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
            fs::copy_file(test::model_path("austen-7m/hf") / f, dir / f, fs::copy_options::overwrite_existing);
    }
    void add(Tensor t) { tensors.push_back(std::move(t)); }
    const Tensor& get(const std::string& name) const {
        for (const Tensor& t : tensors)
            if (t.name == name) return t;
        throw std::runtime_error("no tensor " + name);
    }
    std::unique_ptr<gguf::File> convert_f32() {
        std::ofstream(dir / "config.json") << config.dump(2);
        write_safetensors(dir / "model.safetensors", tensors);
        const std::string out = (dir / "out.gguf").string();
        convert::convert(dir, out, {ElementType::F32, "tiny"});
        return gguf::File::open(out);
    }
};

std::vector<float> floats(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) throw std::runtime_error("missing " + name);
    const auto bytes = f.tensor_data(*t);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

TEST(ConvertArchitectures, LlamaPermutesQueryAndKeyRows) {
    Builder b("LlamaForCausalLM", "llama");
    auto f = b.convert_f32();
    EXPECT_EQ(f->architecture(), "llama");
    EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied
    // Head h, half i, index j of the checkpoint lands on row h*16 + 2j + i.
    for (const auto& [name, gguf_name, heads] : {std::tuple{"model.layers.1.self_attn.q_proj.weight", "blk.1.attn_q.weight", 4},
                                                 std::tuple{"model.layers.1.self_attn.k_proj.weight", "blk.1.attn_k.weight", 2}}) {
        const auto& src = b.get(name).data;
        const auto got = floats(*f, gguf_name);
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 8; ++j)
                    for (int c = 0; c < 64; ++c)
                        ASSERT_EQ(got[static_cast<size_t>((h * 16 + 2 * j + i) * 64 + c)],
                                  src[static_cast<size_t>((h * 16 + i * 8 + j) * 64 + c)]);
    }
    EXPECT_EQ(floats(*f, "blk.0.attn_v.weight"), b.get("model.layers.0.self_attn.v_proj.weight").data);
    EXPECT_EQ(f->get_u32("llama.rope.dimension_count"), 16u);
    EXPECT_EQ(f->get_u32("llama.vocab_size"), 4096u);
    EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "llama-bpe");
}

TEST(ConvertArchitectures, Qwen2KeepsRowsAndBiases) {
    Builder b("Qwen2ForCausalLM", "qwen2");
    b.add(random_tensor("model.layers.0.self_attn.q_proj.bias", {64}, 99));
    b.add(random_tensor("model.layers.0.self_attn.k_proj.bias", {32}, 98));
    b.add(random_tensor("model.layers.0.self_attn.v_proj.bias", {32}, 97));
    // Qwen2's tokenizer splits digits one by one.
    json tj;
    std::ifstream(b.dir / "tokenizer.json") >> tj;
    std::string re = tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"];
    re.replace(re.find("\\p{N}{1,3}"), 10, "\\p{N}");
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = re;
    std::ofstream(b.dir / "tokenizer.json") << tj.dump();
    auto f = b.convert_f32();
    EXPECT_EQ(f->architecture(), "qwen2");
    EXPECT_EQ(floats(*f, "blk.0.attn_q.weight"), b.get("model.layers.0.self_attn.q_proj.weight").data);
    EXPECT_EQ(floats(*f, "blk.0.attn_q.bias"), b.get("model.layers.0.self_attn.q_proj.bias").data);
    EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "qwen2");
    EXPECT_EQ(f->find("qwen2.vocab_size"), nullptr);  // llama.cpp writes it for llama only
    // Bias after weight within a block member.
    const auto& t = f->tensors();
    for (size_t i = 0; i < t.size(); ++i)
        if (t[i].name == "blk.0.attn_q.weight") { EXPECT_EQ(t[i + 1].name, "blk.0.attn_q.bias"); }
}

TEST(ConvertArchitectures, Qwen3HeadNorms) {
    Builder b("Qwen3ForCausalLM", "qwen3");
    b.config["head_dim"] = 16;
    for (int l = 0; l < 2; ++l) {
        b.add(random_tensor("model.layers." + std::to_string(l) + ".self_attn.q_norm.weight", {16}, 50 + l));
        b.add(random_tensor("model.layers." + std::to_string(l) + ".self_attn.k_norm.weight", {16}, 60 + l));
    }
    auto f = b.convert_f32();
    EXPECT_EQ(f->architecture(), "qwen3");
    EXPECT_EQ(floats(*f, "blk.1.attn_k_norm.weight"), b.get("model.layers.1.self_attn.k_norm.weight").data);
    EXPECT_EQ(f->get_u32("qwen3.attention.key_length"), 16u);
}

TEST(ConvertArchitectures, GemmaNormsPlusOne) {
    for (const char* cls : {"Gemma2ForCausalLM", "Gemma3ForCausalLM"}) {
        Builder b(cls, cls);
        b.config["head_dim"] = 16;
        for (int l = 0; l < 2; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            b.add(random_tensor(p + "pre_feedforward_layernorm.weight", {64}, 70 + l));
            b.add(random_tensor(p + "post_feedforward_layernorm.weight", {64}, 80 + l));
        }
        auto f = b.convert_f32();
        const std::string arch = f->architecture();
        EXPECT_EQ(arch, std::string(cls) == "Gemma2ForCausalLM" ? "gemma2" : "gemma3");
        auto src = b.get("model.layers.0.post_attention_layernorm.weight").data;
        for (float& x : src) x += 1.0f;
        EXPECT_EQ(floats(*f, "blk.0.post_attention_norm.weight"), src);
        src = b.get("model.layers.1.pre_feedforward_layernorm.weight").data;
        for (float& x : src) x += 1.0f;
        EXPECT_EQ(floats(*f, "blk.1.ffn_norm.weight"), src);
        EXPECT_NE(f->find_tensor("blk.1.post_ffw_norm.weight"), nullptr);
        EXPECT_EQ(floats(*f, "blk.0.attn_q.weight"), b.get("model.layers.0.self_attn.q_proj.weight").data);  // no permutation
        EXPECT_TRUE(f->find(arch + ".attention.sliding_window"));
    }
}

TEST(ConvertArchitectures, Phi3FusedTensors) {
    Builder b("Phi3ForCausalLM", "phi3");
    b.config["tie_word_embeddings"] = false;
    b.add(random_tensor("lm_head.weight", {4096, 64}, 123));
    auto f = b.convert_f32();
    EXPECT_EQ(f->architecture(), "phi3");
    EXPECT_EQ(f->find_tensor("blk.0.attn_qkv.weight")->ne[1], 128u);
    EXPECT_EQ(f->find_tensor("blk.0.ffn_up.weight")->ne[1], 192u);
    EXPECT_EQ(floats(*f, "output.weight"), b.get("lm_head.weight").data);
    EXPECT_EQ(f->tensors().back().name, "output.weight");
    EXPECT_EQ(f->get_u32("phi3.rope.dimension_count"), 16u);
}

TEST(ConvertArchitectures, ShardedCheckpointAndLlama3RopeFactors) {
    Builder b("LlamaForCausalLM", "sharded");
    b.config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
    std::ofstream(b.dir / "config.json") << b.config.dump();
    std::vector<Tensor> first(b.tensors.begin(), b.tensors.begin() + 5), second(b.tensors.begin() + 5, b.tensors.end());
    write_safetensors(b.dir / "model-00001-of-00002.safetensors", first);
    write_safetensors(b.dir / "model-00002-of-00002.safetensors", second);
    json index = {{"metadata", json::object()}, {"weight_map", json::object()}};
    for (const Tensor& t : first) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
    for (const Tensor& t : second) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
    std::ofstream(b.dir / "model.safetensors.index.json") << index.dump();
    convert::convert(b.dir, (b.dir / "out.gguf").string(), {ElementType::Q8_0, ""});
    auto f = gguf::File::open((b.dir / "out.gguf").string());
    EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, ElementType::Q8_0);
    EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, ElementType::F32);
    EXPECT_EQ(f->get_u32("general.file_type"), 7u);
    EXPECT_EQ(f->get_string("general.name"), "sharded");
    const auto factors = floats(*f, "rope_freqs.weight");
    ASSERT_EQ(factors.size(), 8u);
    EXPECT_EQ(factors.front(), 1.0f);  // high frequencies unscaled
    EXPECT_EQ(factors.back(), 8.0f);   // low frequencies scaled by the factor
    // A shard named in the index but missing is an error.
    fs::remove(b.dir / "model-00002-of-00002.safetensors");
    EXPECT_THROW(convert::convert(b.dir, (b.dir / "out2.gguf").string(), {}), Error);
}

TEST(ConvertArchitectures, ClearErrors) {
    Builder b("GPTNeoXForCausalLM", "neox");
    try {
        b.convert_f32();
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("LlamaForCausalLM, MistralForCausalLM"), std::string::npos) << e.what();
    }
    Builder u("LlamaForCausalLM", "unknown-tensor");
    u.add(random_tensor("model.layers.0.mystery.weight", {4}, 5));
    EXPECT_THROW(u.convert_f32(), Error);
    Builder r("LlamaForCausalLM", "unknown-regex");
    json tj;
    std::ifstream(r.dir / "tokenizer.json") >> tj;
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
    std::ofstream(r.dir / "tokenizer.json") << tj.dump();
    try {
        r.convert_f32();
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown BPE pre-tokenizer"), std::string::npos) << e.what();
    }
    EXPECT_THROW(convert::convert(test::temp_dir() / "nowhere", "x.gguf", {}), Error);
}

}  // namespace
}  // namespace cria::convert

namespace cria::convert {
namespace {

TEST(ConvertArchitectures, EmptyOrMisshapedTensorsAreErrors) {
    Builder e("LlamaForCausalLM", "empty-tensor");
    for (Tensor& t : e.tensors)
        if (t.name == "model.layers.0.mlp.up_proj.weight") t = Tensor{t.name, {0, 64}, {}};
    EXPECT_THROW(e.convert_f32(), Error);
    // Q rows that do not split into the configured heads.
    Builder q("LlamaForCausalLM", "bad-heads");
    q.config["num_attention_heads"] = 3;
    q.config["head_dim"] = 16;
    EXPECT_THROW(q.convert_f32(), Error);
}

}  // namespace
}  // namespace cria::convert
