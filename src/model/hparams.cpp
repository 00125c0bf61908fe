// The hyperparameters every architecture has, read as llama.cpp's
// load_hparams reads them (defaults, "zero means not set", per-layer arrays),
// then the architecture's own keys through its registered definition.

#include "cria/model/hparams.h"

#include <cmath>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "model/arch.h"
#include "model/hparams_keys.h"

namespace cria::model {
namespace {

uint32_t require_positive(const HParamsKeys& keys, std::string_view suffix, uint32_t value) {
    if (value == 0) keys.fail("hyperparameter '" + keys.key(suffix) + "' must be positive");
    return value;
}

// A per-layer key that dense code needs as one value: a scalar, or an array
// whose entries are all equal. Absent: `fallback`.
uint32_t uniform_per_layer(const HParamsKeys& keys, std::string_view suffix, uint32_t n_layer, uint32_t fallback) {
    const std::vector<uint32_t> v = keys.u32_per_layer(suffix, n_layer);
    if (v.empty()) return fallback;
    for (uint32_t x : v)
        if (x != v[0])
            keys.fail("'" + keys.key(suffix) + "' differs between layers, which architecture '" +
                      keys.file().architecture() + "' does not support");
    return v[0];
}

// The same for families with recurrent layers, where a zero entry marks a
// layer without that block (head_count [2, 0]: layer 1 has no attention):
// the non-zero entries must agree; 0 when every entry is zero.
uint32_t uniform_nonzero_per_layer(const HParamsKeys& keys, std::string_view suffix, uint32_t n_layer,
                                   uint32_t fallback) {
    const std::vector<uint32_t> v = keys.u32_per_layer(suffix, n_layer);
    if (v.empty()) return fallback;
    uint32_t value = 0;
    for (uint32_t x : v) {
        if (x == 0) continue;
        if (value != 0 && x != value)
            keys.fail("'" + keys.key(suffix) + "' differs between layers, which architecture '" +
                      keys.file().architecture() + "' does not support");
        value = x;
    }
    return value;
}

// A per-dimension rope factor tensor must hold n_rot/2 f32 values.
void check_rope_factors(const gguf::File& file, const std::string& name, uint32_t n_rot) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) return;
    if (t->n_elements() != n_rot / 2 || t->type != ElementType::F32)
        throw Error(file.path() + ": tensor '" + name + "' must hold " + std::to_string(n_rot / 2) + " f32 values");
}

// The vocabulary size: the rows of the embedding matrix, which the key and
// the token list must agree with when present.
uint32_t read_vocab_size(const gguf::File& file, uint32_t n_embd) {
    const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
    if (!embd) throw Error(file.path() + ": missing tensor 'token_embd.weight'");
    if (embd->n_dims != 2 || embd->ne[0] != n_embd)
        throw Error(file.path() + ": tensor 'token_embd.weight' must have shape [" + std::to_string(n_embd) +
                    ", n_vocab]");
    const uint64_t from_tensor = embd->ne[1];
    if (from_tensor > UINT32_MAX) throw Error(file.path() + ": vocabulary of token_embd.weight is too large");
    if (auto key = file.get_u32(file.arch_key("vocab_size")); key && *key != 0 && *key != from_tensor)
        throw Error(file.path() + ": '" + file.arch_key("vocab_size") + "' = " + std::to_string(*key) +
                    " disagrees with token_embd.weight (" + std::to_string(from_tensor) + " rows)");
    if (const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
        tokens && tokens->is_array() && tokens->size() != from_tensor)
        throw Error(file.path() + ": tokenizer.ggml.tokens has " + std::to_string(tokens->size()) +
                    " entries but token_embd.weight has " + std::to_string(from_tensor) + " rows");
    return static_cast<uint32_t>(from_tensor);
}

// Rope scaling: "none", "linear" with a factor (0 or absent: none), or
// "yarn" (the same freq_scale, plus YaRN's per-pair mix: ext_factor 1, as
// llama.cpp's context sets it for that type). LongRoPE-by-type is refused.
void read_rope_scaling(const HParamsKeys& keys, HParams& hp) {
    const std::string type = keys.string("rope.scaling.type", "linear");
    float factor = keys.f32("rope.scaling.factor", 0.0f);
    if (factor == 0.0f) factor = keys.f32("rope.scale_linear", 0.0f);
    if (type == "yarn") hp.rope_yarn_ext_factor = 1.0f;
    if (type == "none" || factor == 0.0f) {
        hp.rope_freq_scale = 1.0f;
    } else if (type == "linear" || type == "yarn") {
        if (!(factor > 0.0f)) keys.fail("rope.scaling.factor must be positive");
        hp.rope_freq_scale = 1.0f / factor;
    } else if (type == "longrope") {
        keys.fail("rope scaling '" + type + "' is not supported yet");
    } else {
        keys.fail("unknown rope scaling type '" + type + "' (none, linear, yarn or longrope)");
    }
}

// llama.cpp's yarn_attn_factor before the file's attn_factor (its context
// setup, float math as there): YaRN's magnitude gain 1 + 0.1 ln s (s = 1 /
// freq_scale, 1 for s <= 1), divided by the gain ggml's rope multiplies in
// itself whenever ext_factor is set, so that the net gain is applied once.
float yarn_attn_factor(float freq_scale) {
    const float s = 1.0f / freq_scale;
    const float gain = s <= 1.0f ? 1.0f : 0.1f * std::log(s) + 1.0f;
    return gain * (1.0f / (1.0f + 0.1f * std::log(s)));
}

void read_common(const HParamsKeys& keys, HParams& hp, bool recurrent) {
    hp.n_embd = require_positive(keys, "embedding_length", keys.require_u32("embedding_length"));
    hp.n_layer = require_positive(keys, "block_count", keys.require_u32("block_count"));
    if (hp.n_layer > 512) keys.fail("'" + keys.key("block_count") + "' is larger than 512");
    hp.n_ctx_train = require_positive(keys, "context_length", keys.require_u32("context_length"));
    hp.n_expert = keys.u32("expert_count", 0);
    if (hp.n_expert > 0) {
        hp.n_expert_used = keys.u32("expert_used_count", 0);
        if (hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert)
            keys.fail("'" + keys.key("expert_used_count") + "' must be in [1, expert_count = " +
                      std::to_string(hp.n_expert) + "]");
        // Expert groups (DeepSeek-V3): checked against the expert count here,
        // so that routing never meets a split it cannot make.
        hp.expert_group_count = keys.u32("expert_group_count", 0);
        hp.expert_group_used = keys.u32("expert_group_used_count", 0);
        if (hp.expert_group_count > 1) {
            if (hp.n_expert % hp.expert_group_count != 0 || hp.n_expert / hp.expert_group_count < 2)
                keys.fail("'" + keys.key("expert_group_count") + "' = " + std::to_string(hp.expert_group_count) +
                          " does not split " + std::to_string(hp.n_expert) + " experts into groups of at least 2");
            if (hp.expert_group_used == 0 || hp.expert_group_used > hp.expert_group_count)
                keys.fail("'" + keys.key("expert_group_used_count") + "' must be in [1, expert_group_count = " +
                          std::to_string(hp.expert_group_count) + "]");
        }
    }
    if (recurrent) {
        // Zeros allowed: a state-space model has neither attention nor a
        // feed-forward block; the architecture checks what its layers need.
        hp.n_ff = uniform_nonzero_per_layer(keys, "feed_forward_length", hp.n_layer, 0);
        hp.n_head = uniform_nonzero_per_layer(keys, "attention.head_count", hp.n_layer, 0);
        hp.n_head_kv = uniform_nonzero_per_layer(keys, "attention.head_count_kv", hp.n_layer, hp.n_head);
    } else {
        hp.n_ff = require_positive(keys, "feed_forward_length",
                                   uniform_per_layer(keys, "feed_forward_length", hp.n_layer, 0));
        hp.n_head = require_positive(keys, "attention.head_count",
                                     uniform_per_layer(keys, "attention.head_count", hp.n_layer, 0));
        hp.n_head_kv = require_positive(keys, "attention.head_count_kv",
                                        uniform_per_layer(keys, "attention.head_count_kv", hp.n_layer, hp.n_head));
    }
    if ((hp.n_head == 0) != (hp.n_head_kv == 0) || (hp.n_head_kv != 0 && hp.n_head % hp.n_head_kv != 0))
        keys.fail("attention.head_count (" + std::to_string(hp.n_head) +
                  ") is not a multiple of attention.head_count_kv (" + std::to_string(hp.n_head_kv) + ")");

    const uint32_t default_head_dim = hp.n_head != 0 && hp.n_embd % hp.n_head == 0 ? hp.n_embd / hp.n_head : 0;
    hp.head_dim = keys.u32_or_unset("attention.key_length", default_head_dim);
    hp.head_dim_v = keys.u32_or_unset("attention.value_length", hp.head_dim);
    if (hp.n_head != 0 && (hp.head_dim == 0 || hp.head_dim_v == 0))
        keys.fail("head width unknown: embedding_length is not a multiple of head_count and "
                  "attention.key_length is missing");
    hp.n_rot = keys.u32_or_unset("rope.dimension_count", hp.head_dim);
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        keys.fail("rope.dimension_count (" + std::to_string(hp.n_rot) + ") must be even and at most the head width (" +
                  std::to_string(hp.head_dim) + ")");

    hp.norm_rms_eps = keys.f32_or_unset("attention.layer_norm_rms_epsilon", 1e-5f);
    if (!(hp.norm_rms_eps > 0.0f)) keys.fail("attention.layer_norm_rms_epsilon must be positive");
    hp.rope_freq_base = keys.f32_or_unset("rope.freq_base", 10000.0f);
    if (!(hp.rope_freq_base > 0.0f)) keys.fail("rope.freq_base must be positive");
    read_rope_scaling(keys, hp);
    hp.rope_attn_factor = keys.f32_or_unset("rope.scaling.attn_factor", 1.0f);
    if (hp.rope_yarn_ext_factor != 0.0f) hp.rope_attn_factor *= yarn_attn_factor(hp.rope_freq_scale);
    hp.n_ctx_orig = keys.u32_or_unset("rope.scaling.original_context_length", hp.n_ctx_train);
    hp.attention_scale = hp.head_dim == 0 ? 0.0f : 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    hp.swa_layers.assign(hp.n_layer, false);
    hp.nope_layers.assign(hp.n_layer, false);
}

}  // namespace

std::vector<bool> swa_pattern(uint32_t n_layer, uint32_t period) {
    std::vector<bool> layers(n_layer);
    for (uint32_t l = 0; l < n_layer; ++l) layers[l] = period == 0 || l % period < period - 1;
    return layers;
}

HParams read_hparams(const gguf::File& file) {
    HParams hp;
    hp.arch_name = file.architecture();
    const ArchDefinition* def = find_architecture(hp.arch_name);
    if (def == nullptr) {
        std::string names;
        for (std::string_view n : architecture_names()) names += (names.empty() ? "" : ", ") + std::string(n);
        throw Error(file.path() + ": architecture '" + hp.arch_name + "' is not supported (supported: " + names + ")");
    }
    const HParamsKeys keys(file);
    read_common(keys, hp, def->has_recurrent_layers);
    if (hp.n_expert > 0 && !def->supports_experts)
        keys.fail("'" + hp.arch_name + "' with experts (expert_count = " + std::to_string(hp.n_expert) +
                  ") is not supported yet");
    def->read_hparams(keys, hp);
    if (hp.n_expert > 0 && hp.n_ff_exp == 0) keys.fail("the expert width of '" + hp.arch_name + "' is unknown");
    if (hp.n_swa == 0) hp.swa_layers.assign(hp.n_layer, false);
    if (!hp.recurrent_layers.empty() && hp.recurrent_layers.size() != hp.n_layer)
        keys.fail("the recurrent layers of '" + hp.arch_name + "' must name every one of its " +
                  std::to_string(hp.n_layer) + " layers");
    if (hp.has_recurrent_layers() && hp.recurrent_conv_floats == 0 && hp.recurrent_state_floats == 0)
        keys.fail("the recurrent layers of '" + hp.arch_name + "' keep no state");
    // Whether attention is fused, from the first layer that attends (a
    // recurrent layer may have an attn_qkv of its own: minimax-01's lightning).
    uint32_t first_attention = 0;
    while (first_attention < hp.n_layer && !hp.has_attention(first_attention)) ++first_attention;
    hp.fused_qkv = file.find_tensor("blk." + std::to_string(first_attention) + ".attn_qkv.weight") != nullptr;
    check_rope_factors(file, hp.rope_factors_tensor, hp.n_rot);
    check_rope_factors(file, hp.rope_factors_long_tensor, hp.n_rot);
    hp.n_vocab = read_vocab_size(file, hp.n_embd);
    hp.tied_output = file.find_tensor("output.weight") == nullptr;
    return hp;
}

bool long_rope_for_context(const HParams& hp, uint32_t n_ctx) {
    const uint64_t padded = (uint64_t{n_ctx} + 255) / 256 * 256;
    return padded > (hp.n_ctx_orig ? hp.n_ctx_orig : hp.n_ctx_train);
}

std::vector<std::string> supported_architectures() {
    std::vector<std::string> out;
    for (std::string_view n : architecture_names()) out.emplace_back(n);
    return out;
}

bool architecture_supports_experts(const std::string& name) {
    const ArchDefinition* def = find_architecture(name);
    return def != nullptr && def->supports_experts;
}

}  // namespace cria::model
