// gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE, src/models/openai-moe.cpp):
// alternating sliding-window and full-attention layers (the first of each
// pair windowed by default), attention with biases and one learned sink
// logit per head in the softmax's denominator, NeoX rope, and a mixture of
// experts as every feed-forward block: the router has a bias, the top k are
// picked on the raw router logits and weighted by the softmax over those k
// (no renormalisation, no scale), and each expert is gpt-oss's clamped
// SwiGLU (SwigluOai) with per-expert biases. The feed-forward block's input
// norm is post_attention_norm.weight. Real files store the experts as MXFP4.

#include <cmath>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    // llama.cpp's graph sizes the heads by rope.dimension_count (its tensors
    // are {n_embd, n_head * n_rot}, its kq scale 1/sqrt(n_rot)): a file whose
    // key/value widths say otherwise is not one it can run either.
    if (hp.head_dim != hp.n_rot || hp.head_dim_v != hp.n_rot)
        keys.fail("gpt-oss needs attention.key_length and attention.value_length (" + std::to_string(hp.head_dim) +
                  ", " + std::to_string(hp.head_dim_v) + ") equal to rope.dimension_count (" +
                  std::to_string(hp.n_rot) + ")");
    hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_rot));

    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for gpt-oss");
    hp.n_ff_exp = keys.require_u32("expert_feed_forward_length");
    if (hp.n_ff_exp == 0) keys.fail("'" + keys.key("expert_feed_forward_length") + "' must be positive");
    hp.expert_gating = ExpertGating::SoftmaxWeight;
    hp.expert_weights_norm = false;
    hp.expert_weights_scale = 0.0f;  // llama.cpp's graph passes the key's value, but never reads the key
    hp.expert_activation = FfnActivation::SwigluOai;

    hp.n_swa = keys.require_u32("attention.sliding_window");
    if (hp.n_swa == 0) keys.fail("'" + keys.key("attention.sliding_window") + "' must be positive");
    // The pattern is a period (llama.cpp's get_key_or_arr into one value: an
    // array-valued key is ignored and the default period 2 stays).
    const char* pattern = "attention.sliding_window_pattern";
    const uint32_t period = keys.is_array(pattern) ? 2 : keys.u32(pattern, 2);
    hp.swa_layers = swa_pattern(hp.n_layer, period);
    hp.rope_freq_base_swa = keys.f32("rope.freq_base_swa", hp.rope_freq_base);
    if (!(hp.rope_freq_base_swa > 0.0f)) keys.fail("'" + keys.key("rope.freq_base_swa") + "' must be positive");
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_norm = "post_attention_norm.weight";
    o.expert_biases = true;
    o.ffn_scales = false;  // llama.cpp's graph passes no `.scale` of the experts to build_moe_ffn
    declare_dense_tensors(hp, t, w, o);
    for (uint32_t l = 0; l < hp.n_layer; ++l)
        t.vector(layer_tensor(l, "attn_sinks.weight"), hp.n_head, &w.layers[l].attn_sinks);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kGptOss{"gpt-oss", read_hparams, declare_tensors, forward, reference::llama,
                                    /*supports_experts=*/true};

}  // namespace cria::model::archs
