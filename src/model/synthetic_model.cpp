#include "cria/model/synthetic_model.h"

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "cria/core/error.h"
#include "cria/gguf/writer.h"
#include "cria/quant/quantize.h"

namespace cria::model {
namespace {

using gguf::Value;
using gguf::ValueType;

bool is_one_of(const std::string& arch, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (arch == n) return true;
    return false;
}

// A SentencePiece-style vocabulary of the requested size: <unk> <s> </s>, the
// 256 byte tokens, then made-up pieces. Enough for any loader to accept it.
void add_vocab(gguf::Writer& w, uint32_t n_vocab) {
    if (n_vocab < 3 + 256 + 1) throw Error("synthetic model: vocabulary needs at least 260 tokens");
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    tokens.reserve(n_vocab);
    const char* specials[] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 3; ++i) {
        tokens.emplace_back(specials[i]);
        scores.push_back(0.0f);
        types.push_back(i == 0 ? 2 : 3);  // unknown, control
    }
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.emplace_back(buf);
        scores.push_back(0.0f);
        types.push_back(6);  // byte
    }
    const std::string letters = "abcdefghijklmnopqrstuvwxyz";
    for (uint32_t i = 0; tokens.size() < n_vocab; ++i) {
        std::string piece = "\xE2\x96\x81";  // SentencePiece's word-start marker
        for (uint32_t v = i; ; v /= 26) {
            piece += letters[v % 26];
            if (v < 26) break;
        }
        tokens.push_back(std::move(piece));
        scores.push_back(-static_cast<float>(i));
        types.push_back(1);  // normal
    }
    w.add_metadata("tokenizer.ggml.model", Value::string("llama"));
    w.add_metadata("tokenizer.ggml.tokens", Value::array(ValueType::STRING, std::move(tokens)));
    w.add_metadata("tokenizer.ggml.scores", Value::array(ValueType::F32, std::move(scores)));
    w.add_metadata("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types)));
    w.add_metadata("tokenizer.ggml.bos_token_id", Value::u32(1));
    w.add_metadata("tokenizer.ggml.eos_token_id", Value::u32(2));
    w.add_metadata("tokenizer.ggml.unknown_token_id", Value::u32(0));
}

// Generates and converts tensors lazily, one at a time, for the writer.
class TensorFactory {
public:
    TensorFactory(gguf::Writer& writer, uint64_t seed, float stddev) : writer_(writer), seed_(seed), stddev_(stddev) {}

    // A tensor of random values around `mean`, stored as `type`.
    void add(const std::string& name, ElementType type, std::vector<uint64_t> shape, float mean = 0.0f) {
        const uint64_t tensor_seed = next_seed();
        const float stddev = stddev_;
        add_values(name, type, shape, [=](size_t n) { return random_values(tensor_seed, n, mean, stddev); });
    }
    // The seed the next add() would use (taking it: a tensor built from others' values).
    uint64_t next_seed() { return seed_ * 1000003u + counter_++; }
    float stddev() const { return stddev_; }
    static std::vector<float> random_values(uint64_t seed, size_t n, float mean, float stddev) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(mean, stddev);
        std::vector<float> values(n);
        for (float& v : values) v = normal(rng);
        return values;
    }
    // A tensor whose float values `make(n_elements)` computes when written.
    void add_values(const std::string& name, ElementType type, std::vector<uint64_t> shape,
                    std::function<std::vector<float>(size_t)> make) {
        auto buffer = std::make_shared<std::vector<uint8_t>>();
        const std::vector<uint64_t> dims = shape;
        writer_.add_tensor(name, type, dims, [=]() -> std::span<const uint8_t> {
            const int64_t n_per_row = static_cast<int64_t>(dims[0]);
            int64_t n_rows = 1;
            for (size_t i = 1; i < dims.size(); ++i) n_rows *= static_cast<int64_t>(dims[i]);
            const std::vector<float> values = make(static_cast<size_t>(n_per_row * n_rows));
            buffer->assign(*row_size_bytes(type, static_cast<uint64_t>(n_per_row)) * n_rows, 0);
            quant::quantize_rows(type, values.data(), buffer->data(), n_rows, n_per_row);
            return *buffer;
        });
    }

private:
    gguf::Writer& writer_;
    uint64_t seed_;
    float stddev_;
    uint64_t counter_ = 0;
};

// qwen3next / qwen35 / qwen35moe: gated delta-net layers and every
// full_attention_interval-th a gated attention layer (tiny: interval 2,
// delta nets of 2 key heads and 4 value heads of head_dim; conv kernel 4);
// qwen35moe's experts stored as one merged gate_up tensor, qwen3next's as two.
void write_delta_net_model(const SyntheticModelSpec& spec, const std::string& path) {
    const std::string& arch = spec.arch;
    const bool moe = spec.n_expert > 0, next = arch == "qwen3next";
    if (moe == (arch == "qwen35")) throw Error("synthetic model: " + arch + (moe ? " has no experts" : " needs experts"));
    if (spec.n_nextn) throw Error("synthetic model: MTP layers are written for exaone4 only");
    gguf::Writer w;
    auto key = [&](const char* suffix) { return arch + "." + suffix; };
    if (spec.full_attention_interval < 1 || spec.ssm_n_k_heads == 0 || spec.ssm_n_v_heads % spec.ssm_n_k_heads != 0)
        throw Error("synthetic model: bad delta-net layout (interval >= 1, value heads a multiple of the key heads)");
    const uint64_t d = spec.n_embd, q = uint64_t{spec.n_head} * spec.head_dim,
                   kv = uint64_t{spec.n_head_kv} * spec.head_dim, ff = spec.n_ff, ahd = spec.head_dim;
    const uint64_t hd = spec.ssm_head_dim ? spec.ssm_head_dim : spec.head_dim;  // the delta nets' head size
    const uint64_t n_k = spec.ssm_n_k_heads, n_v = spec.ssm_n_v_heads, kd = n_k * hd, vd = n_v * hd,
                   conv = 2 * kd + vd;
    w.add_metadata("general.architecture", Value::string(arch));
    w.add_metadata("general.name", Value::string(spec.name));
    w.add_metadata(key("context_length"), Value::u32(spec.n_ctx));
    w.add_metadata(key("embedding_length"), Value::u32(spec.n_embd));
    w.add_metadata(key("block_count"), Value::u32(spec.n_layer));
    w.add_metadata(key("feed_forward_length"), Value::u32(spec.n_ff));
    w.add_metadata(key("attention.head_count"), Value::u32(spec.n_head));
    w.add_metadata(key("attention.head_count_kv"), Value::u32(spec.n_head_kv));
    w.add_metadata(key("attention.key_length"), Value::u32(spec.head_dim));
    w.add_metadata(key("attention.value_length"), Value::u32(spec.head_dim));
    w.add_metadata(key("rope.dimension_count"), Value::u32(spec.head_dim / 2));  // partial rotary
    w.add_metadata(key("rope.freq_base"), Value::f32(spec.rope_freq_base));
    if (!next) {
        const uint32_t pairs = spec.head_dim / 4;  // rotated pairs; every one in a text section
        w.add_metadata(key("rope.dimension_sections"),
                       Value::array(ValueType::U32, std::vector<uint32_t>{pairs, pairs, pairs, 0}));
    }
    w.add_metadata(key("attention.layer_norm_rms_epsilon"), Value::f32(1e-6f));
    w.add_metadata(key("full_attention_interval"), Value::u32(spec.full_attention_interval));
    w.add_metadata(key("ssm.conv_kernel"), Value::u32(4));
    w.add_metadata(key("ssm.state_size"), Value::u32(static_cast<uint32_t>(hd)));
    w.add_metadata(key("ssm.group_count"), Value::u32(static_cast<uint32_t>(n_k)));
    w.add_metadata(key("ssm.time_step_rank"), Value::u32(static_cast<uint32_t>(n_v)));
    w.add_metadata(key("ssm.inner_size"), Value::u32(static_cast<uint32_t>(vd)));
    if (moe) {
        w.add_metadata(key("expert_count"), Value::u32(spec.n_expert));
        w.add_metadata(key("expert_used_count"), Value::u32(spec.n_expert_used));
        w.add_metadata(key("expert_feed_forward_length"), Value::u32(spec.n_ff_exp));
        w.add_metadata(key("expert_shared_feed_forward_length"), Value::u32(spec.n_ff_shexp));
    }
    add_vocab(w, spec.n_vocab);

    TensorFactory t(w, spec.seed, spec.stddev);
    t.add("token_embd.weight", spec.embd_type, {d, spec.n_vocab});
    for (uint32_t l = 0; l < spec.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        t.add(p + "attn_norm.weight", ElementType::F32, {d}, 1.0f);
        t.add(p + "post_attention_norm.weight", ElementType::F32, {d}, 1.0f);
        if ((l + 1) % spec.full_attention_interval != 0) {  // a delta-net layer
            t.add(p + "attn_qkv.weight", spec.weight_type, {d, conv});
            t.add(p + "attn_gate.weight", spec.weight_type, {d, vd});
            if (next) {
                t.add(p + "ssm_ba.weight", spec.weight_type, {d, 2 * n_v});
            } else {
                t.add(p + "ssm_beta.weight", spec.weight_type, {d, n_v});
                t.add(p + "ssm_alpha.weight", spec.weight_type, {d, n_v});
            }
            t.add(p + "ssm_conv1d.weight", ElementType::F32, {4, conv}, 0.3f);
            t.add(p + "ssm_dt.bias", ElementType::F32, {n_v});
            t.add(p + "ssm_a", ElementType::F32, {n_v}, -1.0f);  // A = -exp(A_log) < 0
            t.add(p + "ssm_norm.weight", ElementType::F32, {hd}, 1.0f);
            t.add(p + "ssm_out.weight", spec.weight_type, {vd, d});
        } else {
            t.add(p + "attn_q.weight", spec.weight_type, {d, 2 * q});
            t.add(p + "attn_k.weight", spec.weight_type, {d, kv});
            t.add(p + "attn_v.weight", spec.weight_type, {d, kv});
            t.add(p + "attn_output.weight", spec.weight_type, {q, d});
            t.add(p + "attn_q_norm.weight", ElementType::F32, {ahd}, 1.0f);
            t.add(p + "attn_k_norm.weight", ElementType::F32, {ahd}, 1.0f);
        }
        if (moe) {
            const uint64_t x = spec.n_expert, fe = spec.n_ff_exp, fs = spec.n_ff_shexp;
            t.add(p + "ffn_gate_inp.weight", ElementType::F32, {d, x});
            if (next) {
                t.add(p + "ffn_gate_exps.weight", spec.weight_type, {d, fe, x});
                t.add(p + "ffn_up_exps.weight", spec.weight_type, {d, fe, x});
            } else {
                t.add(p + "ffn_gate_up_exps.weight", spec.weight_type, {d, 2 * fe, x});
            }
            t.add(p + "ffn_down_exps.weight", spec.weight_type, {fe, d, x});
            t.add(p + "ffn_gate_inp_shexp.weight", ElementType::F32, {d});
            t.add(p + "ffn_gate_shexp.weight", spec.weight_type, {d, fs});
            t.add(p + "ffn_up_shexp.weight", spec.weight_type, {d, fs});
            t.add(p + "ffn_down_shexp.weight", spec.weight_type, {fs, d});
        } else {
            t.add(p + "ffn_gate.weight", spec.weight_type, {d, ff});
            t.add(p + "ffn_up.weight", spec.weight_type, {d, ff});
            t.add(p + "ffn_down.weight", spec.weight_type, {ff, d});
        }
    }
    t.add("output_norm.weight", ElementType::F32, {d}, 1.0f);
    if (!spec.tied_output) t.add("output.weight", spec.weight_type, {d, spec.n_vocab});
    w.write(path);
}

// A WordPiece ("bert") vocabulary as llama.cpp's converter writes one:
// [PAD] [UNK] [CLS] [SEP] [MASK], then word-initial pieces with the "\u2581"
// marker (the letters, a few whole words) and continuation pieces without it
// (the letters: so that every lowercase word tokenizes), then made-up words
// up to n_vocab.
void add_wpm_vocab(gguf::Writer& w, uint32_t n_vocab) {
    const std::string marker = "\xE2\x96\x81";
    std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    std::vector<int32_t> types = {3, 2, 3, 3, 3};  // control, unknown
    const std::string letters = "abcdefghijklmnopqrstuvwxyz";
    for (char c : letters) tokens.push_back(marker + c);
    for (char c : letters) tokens.emplace_back(1, c);
    for (const char* word : {"the", "cat", "dog", "sat", "on", "mat", "hello", "world", "paris", "capital", "of",
                             "france", "is", "what", ".", ",", "?", "!"})
        tokens.push_back(marker + word);
    for (uint32_t i = 0; tokens.size() < n_vocab; ++i) {
        std::string piece = marker + "zz";
        for (uint32_t v = i;; v /= 26) {
            piece += letters[v % 26];
            if (v < 26) break;
        }
        tokens.push_back(std::move(piece));
    }
    if (tokens.size() > n_vocab) throw Error("synthetic model: a WordPiece vocabulary needs at least " +
                                             std::to_string(tokens.size()) + " tokens");
    types.resize(tokens.size(), 1);
    w.add_metadata("tokenizer.ggml.model", Value::string("bert"));
    w.add_metadata("tokenizer.ggml.tokens", Value::array(ValueType::STRING, std::move(tokens)));
    w.add_metadata("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types)));
    w.add_metadata("tokenizer.ggml.token_type_count", Value::u32(2));
    w.add_metadata("tokenizer.ggml.padding_token_id", Value::u32(0));
    w.add_metadata("tokenizer.ggml.unknown_token_id", Value::u32(1));
    w.add_metadata("tokenizer.ggml.bos_token_id", Value::u32(2));
    w.add_metadata("tokenizer.ggml.seperator_token_id", Value::u32(3));  // sic, llama.cpp's key
    w.add_metadata("tokenizer.ggml.mask_token_id", Value::u32(4));
}

// bert / nomic-bert encoders (llama.cpp's tensor names): token types, learned
// positions (bert), LayerNorms with biases, post norms, biases everywhere on
// bert (Q/K/V separate), fused QKV and SwiGLU on nomic-bert; with
// spec.classifier_head, bert's reranker head cls / cls.output (one label).
void write_encoder_model(const SyntheticModelSpec& spec, const std::string& path) {
    const std::string& arch = spec.arch;
    const bool nomic = arch == "nomic-bert";
    if (spec.n_expert || spec.n_nextn) throw Error("synthetic model: " + arch + " has no experts or MTP layers");
    if (nomic && spec.classifier_head) throw Error("synthetic model: nomic-bert has no classifier head");
    gguf::Writer w;
    auto key = [&](const char* suffix) { return arch + "." + suffix; };
    const uint64_t d = spec.n_embd, q = uint64_t{spec.n_head} * spec.head_dim,
                   kv = uint64_t{spec.n_head_kv} * spec.head_dim, ff = spec.n_ff;
    w.add_metadata("general.architecture", Value::string(arch));
    w.add_metadata("general.name", Value::string(spec.name));
    w.add_metadata(key("context_length"), Value::u32(spec.n_ctx));
    w.add_metadata(key("embedding_length"), Value::u32(spec.n_embd));
    w.add_metadata(key("block_count"), Value::u32(spec.n_layer));
    w.add_metadata(key("feed_forward_length"), Value::u32(spec.n_ff));
    w.add_metadata(key("attention.head_count"), Value::u32(spec.n_head));
    w.add_metadata(key("attention.head_count_kv"), Value::u32(spec.n_head_kv));
    w.add_metadata(key("attention.key_length"), Value::u32(spec.head_dim));
    w.add_metadata(key("attention.value_length"), Value::u32(spec.head_dim));
    w.add_metadata(key("attention.layer_norm_epsilon"), Value::f32(1e-12f));
    w.add_metadata(key("attention.causal"), Value::boolean(false));
    // nomic-bert needs the key (as in llama.cpp): mean when the spec has none.
    const int32_t pooling = spec.pooling_type < 0 && nomic ? 1 : spec.pooling_type;
    if (pooling >= 0) w.add_metadata(key("pooling_type"), Value::u32(static_cast<uint32_t>(pooling)));
    if (nomic) w.add_metadata(key("rope.freq_base"), Value::f32(spec.rope_freq_base));
    add_wpm_vocab(w, spec.n_vocab);

    TensorFactory t(w, spec.seed, spec.stddev);
    t.add("token_embd.weight", spec.embd_type, {d, spec.n_vocab});
    t.add("token_types.weight", ElementType::F32, {d, 2});
    if (!nomic) t.add("position_embd.weight", ElementType::F32, {d, spec.n_ctx});
    t.add("token_embd_norm.weight", ElementType::F32, {d}, 1.0f);
    t.add("token_embd_norm.bias", ElementType::F32, {d});
    for (uint32_t l = 0; l < spec.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        if (nomic) {
            t.add(p + "attn_qkv.weight", spec.weight_type, {d, q + 2 * kv});
        } else {
            t.add(p + "attn_q.weight", spec.weight_type, {d, q});
            t.add(p + "attn_q.bias", ElementType::F32, {q});
            t.add(p + "attn_k.weight", spec.weight_type, {d, kv});
            t.add(p + "attn_k.bias", ElementType::F32, {kv});
            t.add(p + "attn_v.weight", spec.weight_type, {d, kv});
            t.add(p + "attn_v.bias", ElementType::F32, {kv});
        }
        t.add(p + "attn_output.weight", spec.weight_type, {q, d});
        if (!nomic) t.add(p + "attn_output.bias", ElementType::F32, {d});
        t.add(p + "attn_output_norm.weight", ElementType::F32, {d}, 1.0f);
        t.add(p + "attn_output_norm.bias", ElementType::F32, {d});
        if (nomic) t.add(p + "ffn_gate.weight", spec.weight_type, {d, ff});
        t.add(p + "ffn_up.weight", spec.weight_type, {d, ff});
        if (!nomic) t.add(p + "ffn_up.bias", ElementType::F32, {ff});
        t.add(p + "ffn_down.weight", spec.weight_type, {ff, d});
        if (!nomic) t.add(p + "ffn_down.bias", ElementType::F32, {d});
        t.add(p + "layer_output_norm.weight", ElementType::F32, {d}, 1.0f);
        t.add(p + "layer_output_norm.bias", ElementType::F32, {d});
    }
    if (spec.classifier_head) {
        if (!spec.classifier_direct) {
            t.add("cls.weight", spec.weight_type, {d, d});
            t.add("cls.bias", ElementType::F32, {d});
        }
        t.add("cls.output.weight", ElementType::F32, {d, 1});
        t.add("cls.output.bias", ElementType::F32, {1});
    }
    w.write(path);
}

}  // namespace

SyntheticModelSpec SyntheticModelSpec::tiny(const std::string& arch) {
    SyntheticModelSpec s;
    s.arch = arch;
    s.name = "tiny-" + arch;
    s.n_vocab = 320;
    s.n_embd = 64;
    s.n_layer = 3;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 16;
    s.n_ff = 96;
    s.tied_output = !is_one_of(arch, {"phi3", "muse-glimmer"});
    if (is_one_of(arch, {"gemma2", "gemma3", "phi3", "muse-glimmer", "granite_swa"})) s.sliding_window = 8;
    if (arch == "granite_swa") s.n_layer = 4;  // two sliding layers, two global, the last without rope
    if (arch == "smollm3") s.n_layer = 4;  // layer 3 applies no rope
    if (arch == "qwen2moe" || arch == "qwen3moe") {
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = 64;  // whole blocks for the quantised types
        if (arch == "qwen2moe") s.n_ff_shexp = 96;
    }
    if (arch == "ernie4_5-moe") {  // a dense first layer, then experts with an ungated shared one
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = 64;
        s.n_ff_shexp = 96;
        s.n_layer_dense_lead = 1;
    }
    if (arch == "glm4moe") {  // a dense first layer, then experts with an ungated shared one
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = 64;
        s.n_ff_shexp = 64;
        s.n_layer_dense_lead = 1;
    }
    if (arch == "deepseek2") {  // a dense first layer, then 4 groups of 2 experts (2 kept), a shared expert
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = 64;
        s.n_ff_shexp = 64;
        s.n_layer_dense_lead = 1;
        s.n_expert_groups = 4;
        s.n_expert_groups_used = 2;
    }
    if (is_one_of(arch, {"qwen35", "qwen35moe", "qwen3next"})) {
        // Delta-net layers 0 and 2, gated attention 1 and 3; 2 key heads and
        // 4 value heads of 16, so the tiled / grouped head maps differ.
        s.n_layer = 4;
        if (arch != "qwen35") {
            s.n_expert = 8;
            s.n_expert_used = 3;
            s.n_ff_exp = 64;
            s.n_ff_shexp = 96;
        }
    }
    if (arch == "granitemoe") {  // experts as wide as feed_forward_length, with an ungated shared expert
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = s.n_ff;
        s.n_ff_shexp = 64;
    }
    if (arch == "gpt-oss") {  // every layer routed; sliding window on the even layers
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = 64;  // whole blocks for MXFP4
        s.sliding_window = 8;
        s.tied_output = false;  // llama.cpp requires output.weight for gpt-oss
    }
    if (arch == "mimo2") {  // fused QKV, every other layer slides (own rope base), sinks
        s.sliding_window = 8;
        s.tied_output = false;  // llama.cpp requires output.weight for mimo2
    }
    if (arch == "olmoe" || arch == "minimax-m2") {  // experts as wide as feed_forward_length
        s.n_expert = 8;
        s.n_expert_used = 3;
        s.n_ff_exp = s.n_ff;
    }
    return s;
}

SyntheticModelSpec SyntheticModelSpec::llama_1b(ElementType type) {
    SyntheticModelSpec s;
    s.arch = "llama";
    s.name = "random-llama-1b";
    s.n_vocab = 128256;
    s.n_embd = 2048;
    s.n_layer = 16;
    s.n_head = 32;
    s.n_head_kv = 8;
    s.head_dim = 64;
    s.n_ff = 8192;
    s.n_ctx = 4096;
    s.rope_freq_base = 500000.0f;
    s.weight_type = type;
    s.embd_type = type;
    return s;
}

SyntheticModelSpec SyntheticModelSpec::qwen3_0_6b(ElementType type) {
    SyntheticModelSpec s;
    s.arch = "qwen3";
    s.name = "random-qwen3-0.6b";
    s.n_vocab = 151936;
    s.n_embd = 1024;
    s.n_layer = 28;
    s.n_head = 16;
    s.n_head_kv = 8;
    s.head_dim = 128;
    s.n_ff = 3072;
    s.n_ctx = 4096;
    s.rope_freq_base = 1000000.0f;
    s.weight_type = type;
    s.embd_type = type;
    return s;
}

SyntheticModelSpec SyntheticModelSpec::qwen35_hybrid(ElementType type) {
    SyntheticModelSpec s;
    s.arch = "qwen35";
    s.name = "random-qwen35-hybrid";
    s.n_vocab = 151936;
    s.n_embd = 1024;
    s.n_layer = 24;
    s.n_head = 8;
    s.n_head_kv = 2;
    s.head_dim = 256;
    s.n_ff = 3584;
    s.n_ctx = 4096;
    s.rope_freq_base = 10000000.0f;
    s.full_attention_interval = 4;
    s.ssm_n_k_heads = 16;
    s.ssm_n_v_heads = 16;
    s.ssm_head_dim = 128;
    s.weight_type = type;
    s.embd_type = type;
    return s;
}

void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& path) {
    const std::string& arch = spec.arch;
    if (is_one_of(arch, {"qwen35", "qwen35moe", "qwen3next"})) return write_delta_net_model(spec, path);
    if (is_one_of(arch, {"bert", "nomic-bert"})) return write_encoder_model(spec, path);
    if (spec.n_nextn && arch != "exaone4") throw Error("synthetic model: MTP layers are written for exaone4 only");
    if (!is_one_of(arch, {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe", "minimax-m2", "ernie4_5-moe", "gemma2",
                          "gemma3", "gpt-oss", "phi3", "smollm3", "seed_oss", "mistral3", "granite", "granitemoe",
                          "exaone4", "muse-glimmer", "granite_swa", "deepseek2", "glm4moe", "qwen35", "qwen35moe",
                          "qwen3next", "mimo2"}))
        throw Error("synthetic model: unknown architecture '" + arch + "'");
    const bool moe = spec.n_expert > 0;
    if (moe && !is_one_of(arch, {"llama", "qwen2moe", "qwen3moe", "olmoe", "minimax-m2", "ernie4_5-moe", "granite",
                                 "granitemoe", "mistral3", "granite_swa", "gpt-oss", "deepseek2",
                                 "glm4moe"}))
        throw Error("synthetic model: '" + arch + "' has no experts");
    if (moe && is_one_of(arch, {"olmoe", "minimax-m2", "granite", "granitemoe", "mistral3", "granite_swa"}) &&
        spec.n_ff_exp != spec.n_ff)
        throw Error("synthetic model: " + arch + "'s experts are n_ff wide");
    if (is_one_of(arch, {"qwen2moe", "qwen3moe", "olmoe", "minimax-m2", "ernie4_5-moe", "gpt-oss", "deepseek2", "glm4moe"}) && !moe) throw Error("synthetic model: " + arch + " needs experts");
    const bool gemma = is_one_of(arch, {"gemma2", "gemma3"});
    const bool muse = arch == "muse-glimmer";
    const bool granite_swa = arch == "granite_swa";
    if (muse && spec.tied_output) throw Error("synthetic model: muse-glimmer has its own output matrix");
    const bool qk_norm = is_one_of(arch, {"qwen3", "qwen3moe", "gemma3", "olmoe", "minimax-m2", "exaone4", "muse-glimmer",
                                         "glm4moe"});
    const bool qk_norm_full = is_one_of(arch, {"olmoe", "minimax-m2"});  // over the whole Q and K vectors
    const bool post_norms = gemma || arch == "exaone4" || muse;
    const bool pre_norms = arch != "exaone4";  // exaone4 is post-norm only
    const bool fused = arch == "phi3";
    const bool mimo2 = arch == "mimo2";  // fused QKV only
    const bool mla = arch == "deepseek2";
    // MLA widths (see SyntheticModelSpec): latent, roped, unroped, value.
    const uint64_t mla_r = 2 * uint64_t{spec.head_dim}, mla_rot = spec.head_dim, mla_nope = 2 * uint64_t{spec.head_dim},
                   mla_dv = 2 * uint64_t{spec.head_dim};
    const bool gpt_oss = arch == "gpt-oss";  // biases everywhere, attention sinks, biased experts
    const ElementType expert_type = spec.expert_type.value_or(spec.weight_type);

    gguf::Writer w;
    auto key = [&](const char* suffix) { return arch + "." + suffix; };
    w.add_metadata("general.architecture", Value::string(arch));
    w.add_metadata("general.name", Value::string(spec.name));
    w.add_metadata(key("context_length"), Value::u32(spec.n_ctx));
    w.add_metadata(key("embedding_length"), Value::u32(spec.n_embd));
    w.add_metadata(key("block_count"), Value::u32(spec.n_layer + spec.n_nextn));
    if (spec.n_nextn) w.add_metadata(key("nextn_predict_layers"), Value::u32(spec.n_nextn));
    w.add_metadata(key("feed_forward_length"), Value::u32(spec.n_ff));
    w.add_metadata(key("attention.head_count"), Value::u32(spec.n_head));
    if (mla) {
        // Absorbed files cache one KV head [latent | roped part] whose value is the latent.
        w.add_metadata(key("attention.head_count_kv"), Value::u32(spec.mla_plain ? spec.n_head : 1));
        w.add_metadata(key("attention.key_length"),
                       Value::u32(static_cast<uint32_t>(spec.mla_plain ? mla_nope + mla_rot : mla_r + mla_rot)));
        w.add_metadata(key("attention.value_length"), Value::u32(static_cast<uint32_t>(spec.mla_plain ? mla_dv : mla_r)));
        if (!spec.mla_plain) {
            w.add_metadata(key("attention.key_length_mla"), Value::u32(static_cast<uint32_t>(mla_nope + mla_rot)));
            w.add_metadata(key("attention.value_length_mla"), Value::u32(static_cast<uint32_t>(mla_dv)));
        }
        w.add_metadata(key("attention.kv_lora_rank"), Value::u32(static_cast<uint32_t>(mla_r)));
        w.add_metadata(key("attention.q_lora_rank"), Value::u32(spec.n_lora_q));
        w.add_metadata(key("rope.dimension_count"), Value::u32(static_cast<uint32_t>(mla_rot)));
    } else {
        w.add_metadata(key("attention.head_count_kv"), Value::u32(spec.n_head_kv));
        w.add_metadata(key("attention.key_length"), Value::u32(spec.head_dim));
        w.add_metadata(key("attention.value_length"), Value::u32(spec.head_dim));
        if (arch == "glm4moe") {
            // Partial rotary under M-RoPE: half of each head turns, in four
            // equal sections (the last one, "extra", at position 0 for text).
            w.add_metadata(key("rope.dimension_count"), Value::u32(spec.head_dim / 2));
            const int32_t sec = static_cast<int32_t>(spec.head_dim / 16);
            w.add_metadata(key("rope.dimension_sections"), Value::array(ValueType::I32, std::vector<int32_t>{sec, sec, sec, sec}));
        } else {
            w.add_metadata(key("rope.dimension_count"), Value::u32(spec.head_dim));
        }
    }
    w.add_metadata(key("rope.freq_base"), Value::f32(spec.rope_freq_base));
    w.add_metadata(key("attention.layer_norm_rms_epsilon"), Value::f32(1e-6f));
    if (moe) {
        w.add_metadata(key("expert_count"), Value::u32(spec.n_expert));
        w.add_metadata(key("expert_used_count"), Value::u32(spec.n_expert_used));
        if (arch != "olmoe") w.add_metadata(key("expert_feed_forward_length"), Value::u32(spec.n_ff_exp));
        if (arch == "minimax-m2") w.add_metadata(key("expert_gating_func"), Value::u32(2));  // sigmoid
        if (arch == "glm4moe") {
            w.add_metadata(key("leading_dense_block_count"), Value::u32(spec.n_layer_dense_lead));
            w.add_metadata(key("expert_shared_count"), Value::u32(spec.n_ff_shexp / spec.n_ff_exp));
            w.add_metadata(key("expert_weights_norm"), Value::boolean(true));
            w.add_metadata(key("expert_weights_scale"), Value::f32(1.5f));
        }
        if (arch == "deepseek2") {
            w.add_metadata(key("leading_dense_block_count"), Value::u32(spec.n_layer_dense_lead));
            w.add_metadata(key("expert_shared_count"), Value::u32(spec.n_ff_shexp / spec.n_ff_exp));
            w.add_metadata(key("expert_gating_func"), Value::u32(2));  // sigmoid
            w.add_metadata(key("expert_weights_norm"), Value::boolean(true));
            w.add_metadata(key("expert_weights_scale"), Value::f32(2.5f));
            w.add_metadata(key("expert_group_count"), Value::u32(spec.n_expert_groups));
            w.add_metadata(key("expert_group_used_count"), Value::u32(spec.n_expert_groups_used));
        }
        if (arch == "ernie4_5-moe") {
            w.add_metadata(key("leading_dense_block_count"), Value::u32(spec.n_layer_dense_lead));
            w.add_metadata(key("interleave_moe_layer_step"), Value::u32(1));
        }
        if (spec.n_ff_shexp && !mla && arch != "glm4moe") w.add_metadata(key("expert_shared_feed_forward_length"), Value::u32(spec.n_ff_shexp));
    }
    if (spec.sliding_window) w.add_metadata(key("attention.sliding_window"), Value::u32(spec.sliding_window));
    if (spec.rope_yarn_factor > 0.0f) {
        w.add_metadata(key("rope.scaling.type"), Value::string("yarn"));
        w.add_metadata(key("rope.scaling.factor"), Value::f32(spec.rope_yarn_factor));
        w.add_metadata(key("rope.scaling.original_context_length"), Value::u32(spec.rope_yarn_original_context));
    }
    if (arch == "gemma2") {
        w.add_metadata(key("attn_logit_softcapping"), Value::f32(50.0f));
        w.add_metadata(key("final_logit_softcapping"), Value::f32(30.0f));
    }
    if (muse || granite_swa) {
        // The converters' layout: one flag per layer (every other layer
        // slides, layer 0 first), or the scalar / nothing the spec asks for.
        if (spec.swa_pattern < 0) {
            std::vector<uint8_t> flags(spec.n_layer);
            for (uint32_t l = 0; l < spec.n_layer; ++l) flags[l] = l % 2 == 0;
            w.add_metadata(key("attention.sliding_window_pattern"), Value::array(gguf::ValueType::BOOL, flags));
        } else if (spec.swa_pattern > 0) {
            w.add_metadata(key("attention.sliding_window_pattern"), Value::u32(static_cast<uint32_t>(spec.swa_pattern)));
        }
    }
    if (mimo2) {  // one flag per block (layer 0 slides), the keys llama.cpp requires
        std::vector<uint8_t> flags(spec.n_layer);
        for (uint32_t l = 0; l < spec.n_layer; ++l) flags[l] = l % 2 == 0;
        w.add_metadata(key("attention.sliding_window_pattern"), Value::array(gguf::ValueType::BOOL, flags));
        w.add_metadata(key("expert_feed_forward_length"), Value::u32(spec.n_ff));
        w.add_metadata(key("rope.freq_base_swa"), Value::f32(5000.0f));
    }
    if (granite_swa) {  // rope on every layer but the last (integer flags)
        std::vector<uint32_t> rope(spec.n_layer, 1);
        rope.back() = 0;
        w.add_metadata(key("attention.rope_pattern"), Value::array(gguf::ValueType::U32, rope));
    }
    if (muse) {
        w.add_metadata(key("rope.freq_base_swa"), Value::f32(5000.0f));
        w.add_metadata(key("logit_scale"), Value::f32(0.75f));
        w.add_metadata(key("final_logit_softcapping"), Value::f32(4.0f));  // low, so that it bites
    }
    if (is_one_of(arch, {"granite", "granitemoe", "granite_swa"})) {
        w.add_metadata(key("logit_scale"), Value::f32(2.0f));
        w.add_metadata(key("residual_scale"), Value::f32(0.5f));
        w.add_metadata(key("embedding_scale"), Value::f32(3.0f));
        w.add_metadata(key("attention.scale"), Value::f32(0.2f));
    }
    add_vocab(w, spec.n_vocab);

    // Norm weights sit around 1 (gemma files store 1 + w already, as
    // llama.cpp's converter writes them), projections around 0.
    TensorFactory t(w, spec.seed, spec.stddev);
    const uint64_t d = spec.n_embd, q = uint64_t{spec.n_head} * spec.head_dim,
                   kv = uint64_t{spec.n_head_kv} * spec.head_dim, ff = spec.n_ff, hd = spec.head_dim;
    t.add("token_embd.weight", spec.embd_type, {d, spec.n_vocab});
    // deepseek2's attention tensors, attn_output included.
    const auto add_mla_attention = [&](const std::string& p) {
        const uint64_t H = spec.n_head, r = mla_r, rot = mla_rot, nope = mla_nope, dv = mla_dv;
        if (spec.n_lora_q > 0) {
            t.add(p + "attn_q_a.weight", spec.weight_type, {d, spec.n_lora_q});
            t.add(p + "attn_q_a_norm.weight", ElementType::F32, {spec.n_lora_q}, 1.0f);
            t.add(p + "attn_q_b.weight", spec.weight_type, {spec.n_lora_q, H * (nope + rot)});
        } else {
            t.add(p + "attn_q.weight", spec.weight_type, {d, H * (nope + rot)});
        }
        t.add(p + "attn_kv_a_mqa.weight", spec.weight_type, {d, r + rot});
        t.add(p + "attn_kv_a_norm.weight", ElementType::F32, {r}, 1.0f);
        const uint64_t kb_seed = t.next_seed(), vb_seed = t.next_seed();
        const float sd = t.stddev();
        if (!spec.mla_plain) {
            t.add_values(p + "attn_k_b.weight", spec.weight_type, {nope, r, H},
                         [=](size_t n) { return TensorFactory::random_values(kb_seed, n, 0.0f, sd); });
            t.add_values(p + "attn_v_b.weight", spec.weight_type, {r, dv, H},
                         [=](size_t n) { return TensorFactory::random_values(vb_seed, n, 0.0f, sd); });
        } else {
            // attn_kv_b [r, H (nope + dv)]: head h's rows are k_b[d, :, h]
            // (k_b's rows read across) for d < nope, then v_b[:, j, h].
            t.add_values(p + "attn_kv_b.weight", spec.weight_type, {r, H * (nope + dv)}, [=](size_t) {
                const std::vector<float> kb = TensorFactory::random_values(kb_seed, nope * r * H, 0.0f, sd);
                const std::vector<float> vb = TensorFactory::random_values(vb_seed, r * dv * H, 0.0f, sd);
                std::vector<float> out(r * H * (nope + dv));
                for (uint64_t h = 0; h < H; ++h) {
                    for (uint64_t dd = 0; dd < nope; ++dd)
                        for (uint64_t i = 0; i < r; ++i)
                            out[(h * (nope + dv) + dd) * r + i] = kb[(h * r + i) * nope + dd];
                    for (uint64_t j = 0; j < dv; ++j)
                        for (uint64_t i = 0; i < r; ++i) out[(h * (nope + dv) + nope + j) * r + i] = vb[(h * dv + j) * r + i];
                }
                return out;
            });
        }
        t.add(p + "attn_output.weight", spec.weight_type, {H * dv, d});
    };
    const auto add_layer = [&](uint32_t l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        if (pre_norms) t.add(p + "attn_norm.weight", ElementType::F32, {d}, 1.0f);
        if (mla) {
            add_mla_attention(p);
        } else if (fused || mimo2) {
            t.add(p + "attn_qkv.weight", spec.weight_type, {d, q + 2 * kv});
        } else {
            t.add(p + "attn_q.weight", spec.weight_type, {d, q});
            t.add(p + "attn_k.weight", spec.weight_type, {d, kv});
            t.add(p + "attn_v.weight", spec.weight_type, {d, kv});
        }
        if (is_one_of(arch, {"qwen2", "qwen2moe", "seed_oss", "glm4moe", "gpt-oss"})) {
            t.add(p + "attn_q.bias", ElementType::F32, {q});
            t.add(p + "attn_k.bias", ElementType::F32, {kv});
            t.add(p + "attn_v.bias", ElementType::F32, {kv});
        }
        if (qk_norm) {
            t.add(p + "attn_q_norm.weight", ElementType::F32, {qk_norm_full ? q : hd}, 1.0f);
            t.add(p + "attn_k_norm.weight", ElementType::F32, {qk_norm_full ? kv : hd}, 1.0f);
        }
        if (muse) t.add(p + "attn_gate.weight", spec.weight_type, {d, q});
        if (granite_swa) t.add(p + "attn_sinks.weight", ElementType::F32, {spec.n_head}, 1.0f);
        if (mimo2) t.add(p + "attn_sinks.weight", ElementType::F32, {spec.n_head});
        if (!mla) t.add(p + "attn_output.weight", spec.weight_type, {q, d});
        if (gpt_oss) {
            t.add(p + "attn_output.bias", ElementType::F32, {d});
            t.add(p + "attn_sinks.weight", ElementType::F32, {spec.n_head});
        }
        if (post_norms) t.add(p + "post_attention_norm.weight", ElementType::F32, {d}, 1.0f);
        if (pre_norms) {  // seed_oss names its pre-FFN norm post_attention_norm
            const char* ffn_norm = is_one_of(arch, {"seed_oss", "gpt-oss", "glm4moe"}) ? "post_attention_norm.weight" : "ffn_norm.weight";
            t.add(p + ffn_norm, ElementType::F32, {d}, 1.0f);
        }
        if (moe && l >= spec.n_layer_dense_lead) {
            const uint64_t x = spec.n_expert, fe = spec.n_ff_exp;
            t.add(p + "ffn_gate_inp.weight", ElementType::F32, {d, x});
            if (is_one_of(arch, {"minimax-m2", "ernie4_5-moe", "deepseek2", "glm4moe"})) t.add(p + "exp_probs_b.bias", ElementType::F32, {x});
            if (gpt_oss) t.add(p + "ffn_gate_inp.bias", ElementType::F32, {x});
            t.add(p + "ffn_gate_exps.weight", expert_type, {d, fe, x});
            t.add(p + "ffn_up_exps.weight", expert_type, {d, fe, x});
            t.add(p + "ffn_down_exps.weight", expert_type, {fe, d, x});
            if (gpt_oss) {
                t.add(p + "ffn_gate_exps.bias", ElementType::F32, {fe, x});
                t.add(p + "ffn_up_exps.bias", ElementType::F32, {fe, x});
                t.add(p + "ffn_down_exps.bias", ElementType::F32, {d, x});
            }
            if (const uint64_t fs = spec.n_ff_shexp; fs > 0) {
                if (arch == "qwen2moe") t.add(p + "ffn_gate_inp_shexp.weight", ElementType::F32, {d});
                t.add(p + "ffn_gate_shexp.weight", spec.weight_type, {d, fs});
                t.add(p + "ffn_up_shexp.weight", spec.weight_type, {d, fs});
                t.add(p + "ffn_down_shexp.weight", spec.weight_type, {fs, d});
            }
        } else if (fused) {
            t.add(p + "ffn_up.weight", spec.weight_type, {d, 2 * ff});
        } else {
            t.add(p + "ffn_gate.weight", spec.weight_type, {d, ff});
            t.add(p + "ffn_up.weight", spec.weight_type, {d, ff});
        }
        if (!moe || l < spec.n_layer_dense_lead) t.add(p + "ffn_down.weight", spec.weight_type, {ff, d});
        if (post_norms) t.add(p + "post_ffw_norm.weight", ElementType::F32, {d}, 1.0f);
    };
    for (uint32_t l = 0; l < spec.n_layer; ++l) add_layer(l);
    t.add("output_norm.weight", ElementType::F32, {d}, 1.0f);
    if (!spec.tied_output) t.add("output.weight", spec.weight_type, {d, spec.n_vocab});
    // MTP layers last, so that the trunk's weights do not depend on them.
    for (uint32_t l = spec.n_layer; l < spec.n_layer + spec.n_nextn; ++l) {
        add_layer(l);
        const std::string p = "blk." + std::to_string(l) + ".";
        t.add(p + "nextn.eh_proj.weight", spec.weight_type, {2 * d, d});
        t.add(p + "nextn.enorm.weight", ElementType::F32, {d}, 1.0f);
        t.add(p + "nextn.hnorm.weight", ElementType::F32, {d}, 1.0f);
    }
    w.write(path);
}

}  // namespace cria::model
