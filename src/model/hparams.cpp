#include "cria/model/hparams.h"

#include <cmath>
#include <string_view>

#include "cria/core/error.h"
#include "cria/gguf/file.h"

namespace cria::model {
namespace {

[[noreturn]] void fail(const gguf::File& file, const std::string& what) {
    throw Error(file.path() + ": " + what);
}

uint32_t require_u32(const gguf::File& file, const std::string& key) {
    auto v = file.get_u32(key);
    if (!v) fail(file, "missing hyperparameter '" + key + "'");
    return *v;
}

uint32_t require_positive(const gguf::File& file, const std::string& key, uint32_t value) {
    if (value == 0) fail(file, "hyperparameter '" + key + "' must be positive");
    return value;
}

Architecture parse_architecture(const gguf::File& file, const std::string& name) {
    if (name == "llama") return Architecture::Llama;
    if (name == "qwen2") return Architecture::Qwen2;
    if (name == "qwen3") return Architecture::Qwen3;
    if (name == "gemma2") return Architecture::Gemma2;
    if (name == "gemma3") return Architecture::Gemma3;
    if (name == "phi3") return Architecture::Phi3;
    fail(file, "architecture '" + name + "' is not supported (supported: llama, qwen2, qwen3, gemma2, gemma3, phi3)");
}

// llama.cpp's set_swa_pattern(n): of every n layers, the first n-1 use the
// sliding window and the last one attends globally.
std::vector<bool> swa_pattern(uint32_t n_layer, uint32_t period) {
    std::vector<bool> layers(n_layer);
    for (uint32_t l = 0; l < n_layer; ++l) layers[l] = l % period < period - 1;
    return layers;
}

// A per-dimension rope factor tensor must hold n_rot/2 f32 values.
void check_rope_factors(const gguf::File& file, const std::string& name, uint32_t n_rot) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) return;
    if (t->n_elements() != n_rot / 2 || t->type != ElementType::F32)
        fail(file, "tensor '" + name + "' must hold " + std::to_string(n_rot / 2) + " f32 values");
}

// The vocabulary size: the key when present, else the token list, else the
// embedding matrix. They must agree when several are present.
uint32_t read_vocab_size(const gguf::File& file, uint32_t n_embd) {
    const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
    if (!embd) fail(file, "missing tensor 'token_embd.weight'");
    if (embd->n_dims != 2 || embd->ne[0] != n_embd)
        fail(file, "tensor 'token_embd.weight' must have shape [" + std::to_string(n_embd) + ", n_vocab]");
    const uint64_t from_tensor = embd->ne[1];
    if (from_tensor > UINT32_MAX) fail(file, "vocabulary of token_embd.weight is too large");
    if (auto key = file.get_u32(file.arch_key("vocab_size")); key && *key != from_tensor)
        fail(file, "'" + file.arch_key("vocab_size") + "' = " + std::to_string(*key) +
                       " disagrees with token_embd.weight (" + std::to_string(from_tensor) + " rows)");
    if (const gguf::Value* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->is_array() &&
                                                                       tokens->size() != from_tensor)
        fail(file, "tokenizer.ggml.tokens has " + std::to_string(tokens->size()) +
                       " entries but token_embd.weight has " + std::to_string(from_tensor) + " rows");
    return static_cast<uint32_t>(from_tensor);
}

}  // namespace

HParams read_hparams(const gguf::File& file) {
    HParams hp;
    hp.arch_name = file.architecture();
    hp.arch = parse_architecture(file, hp.arch_name);
    auto key = [&](std::string_view suffix) { return file.arch_key(suffix); };

    hp.n_embd = require_positive(file, key("embedding_length"), require_u32(file, key("embedding_length")));
    hp.n_layer = require_positive(file, key("block_count"), require_u32(file, key("block_count")));
    hp.n_ff = require_positive(file, key("feed_forward_length"), require_u32(file, key("feed_forward_length")));
    hp.n_head = require_positive(file, key("attention.head_count"), require_u32(file, key("attention.head_count")));
    hp.n_head_kv = require_positive(file, key("attention.head_count_kv"),
                                    file.get_u32(key("attention.head_count_kv"), hp.n_head));
    hp.n_ctx_train = require_positive(file, key("context_length"), require_u32(file, key("context_length")));
    if (hp.n_head % hp.n_head_kv != 0)
        fail(file, "attention.head_count (" + std::to_string(hp.n_head) +
                       ") is not a multiple of attention.head_count_kv (" + std::to_string(hp.n_head_kv) + ")");

    const uint32_t default_head_dim = hp.n_embd % hp.n_head == 0 ? hp.n_embd / hp.n_head : 0;
    hp.head_dim = file.get_u32(key("attention.key_length"), default_head_dim);
    hp.head_dim_v = file.get_u32(key("attention.value_length"), hp.head_dim);
    if (hp.head_dim == 0 || hp.head_dim_v == 0)
        fail(file, "head width unknown: embedding_length is not a multiple of head_count and "
                   "attention.key_length is missing");
    hp.n_rot = file.get_u32(key("rope.dimension_count"), hp.head_dim);
    if (hp.n_rot == 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        fail(file, "rope.dimension_count (" + std::to_string(hp.n_rot) + ") must be even and at most the head width (" +
                       std::to_string(hp.head_dim) + ")");

    hp.norm_rms_eps = file.get_f32(key("attention.layer_norm_rms_epsilon"), 1e-5f);
    if (!(hp.norm_rms_eps > 0.0f)) fail(file, "attention.layer_norm_rms_epsilon must be positive");
    hp.rope_freq_base = file.get_f32(key("rope.freq_base"), 10000.0f);
    if (!(hp.rope_freq_base > 0.0f)) fail(file, "rope.freq_base must be positive");
    const std::string scaling = file.get_string(key("rope.scaling.type"), "none");
    if (scaling == "linear") {
        const float factor = file.get_f32(key("rope.scaling.factor"), 1.0f);
        if (!(factor > 0.0f)) fail(file, "rope.scaling.factor must be positive");
        hp.rope_freq_scale = 1.0f / factor;
    } else if (scaling != "none") {
        fail(file, "rope scaling '" + scaling + "' is not supported yet");
    }

    hp.rope_attn_factor = file.get_f32(key("rope.scaling.attn_factor"), 1.0f);
    hp.n_ctx_orig = file.get_u32(key("rope.scaling.original_context_length"), hp.n_ctx_train);
    hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    hp.swa_layers.assign(hp.n_layer, false);

    switch (hp.arch) {
        case Architecture::Llama:
            hp.rope_order = RopeOrder::Normal;
            if (file.find_tensor("rope_freqs.weight")) hp.rope_factors_tensor = "rope_freqs.weight";
            break;
        case Architecture::Qwen2:
            hp.rope_order = RopeOrder::NeoX;
            hp.has_qkv_bias = true;
            break;
        case Architecture::Qwen3:
            hp.rope_order = RopeOrder::NeoX;
            hp.has_qk_norm = true;
            break;
        case Architecture::Gemma2:
            hp.rope_order = RopeOrder::NeoX;
            hp.n_swa = file.get_u32(key("attention.sliding_window"), 4096);
            hp.swa_layers = swa_pattern(hp.n_layer, 2);
            hp.rope_freq_base_swa = hp.rope_freq_base;
            hp.rope_freq_scale_swa = hp.rope_freq_scale;
            hp.attn_softcap = file.get_f32(key("attn_logit_softcapping"), 50.0f);
            hp.final_softcap = file.get_f32(key("final_logit_softcapping"), 30.0f);
            hp.scale_embeddings = true;
            hp.has_post_norms = true;
            hp.ffn_activation = FfnActivation::GeluTanh;
            // Gemma 2 27B scales queries by the model width per head, not the head width.
            if (hp.n_layer == 46) hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head));
            break;
        case Architecture::Gemma3: {
            hp.rope_order = RopeOrder::NeoX;
            const auto window = file.get_u32(key("attention.sliding_window"));
            if (!window) fail(file, "missing hyperparameter '" + key("attention.sliding_window") + "'");
            hp.n_swa = *window;
            hp.swa_layers = swa_pattern(hp.n_layer, 6);
            hp.rope_freq_base_swa = 10000.0f;  // local layers keep the original base
            hp.rope_freq_scale_swa = 1.0f;
            hp.scale_embeddings = true;
            hp.has_post_norms = true;
            hp.has_qk_norm = true;
            hp.ffn_activation = FfnActivation::GeluTanh;
            if (hp.n_layer == 62) hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head));
            break;
        }
        case Architecture::Phi3:
            hp.rope_order = RopeOrder::NeoX;
            hp.fused_gate_up = true;
            // llama.cpp reads phi3's sliding_window but disables it (results
            // differ from the reference implementation otherwise); so do we.
            if (file.find_tensor("rope_factors_short.weight")) hp.rope_factors_tensor = "rope_factors_short.weight";
            if (file.find_tensor("rope_factors_long.weight")) hp.rope_factors_long_tensor = "rope_factors_long.weight";
            break;
    }
    if (hp.n_swa == 0) hp.swa_layers.assign(hp.n_layer, false);
    hp.fused_qkv = file.find_tensor("blk.0.attn_qkv.weight") != nullptr;
    check_rope_factors(file, hp.rope_factors_tensor, hp.n_rot);
    check_rope_factors(file, hp.rope_factors_long_tensor, hp.n_rot);

    hp.n_vocab = read_vocab_size(file, hp.n_embd);
    hp.tied_output = file.find_tensor("output.weight") == nullptr;
    return hp;
}

}  // namespace cria::model
