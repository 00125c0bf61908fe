// granite_swa (GraniteSWA, and GraniteMoeSWA with experts): granite's block
// and scales (embedding_scale, residual_scale, attention.scale, logits
// divided by logit_scale) on interleaved sliding-window and full attention,
// with attention sinks (attn_sinks [n_head], required) in every layer.
//
// It does not exist in the llama.cpp build we match (no fixture); this
// follows upstream's first version as archs-part2.md §7 records it:
// attention.sliding_window is required; attention.sliding_window_pattern
// (required) is a per-layer array (an entry not 0: sliding window) or one
// value copied to every layer (not a period); attention.rope_pattern, an
// optional per-layer array (an entry not 0: rope; absent: rope everywhere),
// replaces granite's rope.scaling.finetuned switch. Every layer ropes with the
// model's base and scale (no separate sliding-window base). Experts as granite:
// as wide as feed_forward_length, softmax, renormalised, an optional ungated
// shared expert. Upstream's later layout with fused gate-up experts
// (ffn_gate_up_exps) and a fused [gate; up] shared expert is refused (unknown
// tensor, or ffn_up_shexp of the wrong shape).

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    for (const char* required : {"attention.layer_norm_rms_epsilon", "logit_scale", "attention.sliding_window",
                                 "attention.sliding_window_pattern"})
        if (!keys.has(required)) keys.fail("missing required key '" + keys.key(required) + "'");
    hp.rope_order = RopeOrder::Normal;
    if (keys.has_tensor("rope_freqs.weight")) hp.rope_factors_tensor = "rope_freqs.weight";
    const float logit_scale = keys.f32("logit_scale", 1.0f);
    if (logit_scale == 0.0f)
        keys.fail("'" + keys.key("logit_scale") + "' must not be 0 (the logits are divided by it)");
    hp.logit_multiplier = 1.0f / logit_scale;
    hp.residual_scale = keys.f32("residual_scale", 0.0f);
    hp.embedding_scale = keys.f32("embedding_scale", 0.0f);
    hp.attention_scale = keys.f32_or_unset("attention.scale", hp.attention_scale);

    hp.n_swa = keys.u32("attention.sliding_window", 0);
    if (keys.is_array("attention.sliding_window_pattern"))
        hp.swa_layers = keys.layer_flags("attention.sliding_window_pattern", hp.n_layer);
    else
        hp.swa_layers.assign(hp.n_layer, keys.u32("attention.sliding_window_pattern", 0) != 0);
    bool any_swa = false;
    for (uint32_t l = 0; l < hp.n_layer; ++l) any_swa = any_swa || hp.swa_layers[l];
    if (any_swa && hp.n_swa == 0)
        keys.fail("'" + keys.key("attention.sliding_window") + "' is 0 but sliding_window_pattern marks sliding-window layers");
    hp.rope_freq_base_swa = hp.rope_freq_base;  // the graph ropes every layer alike
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    if (keys.has("attention.rope_pattern")) {
        const std::vector<bool> rope = keys.layer_flags("attention.rope_pattern", hp.n_layer);
        for (uint32_t l = 0; l < hp.n_layer; ++l) hp.nope_layers[l] = !rope[l];
    }

    if (hp.n_expert > 0) {
        hp.n_ff_exp = hp.n_ff;
        hp.expert_gating = ExpertGating::Softmax;
        hp.expert_weights_norm = true;
        hp.expert_weights_scale = 0.0f;
        hp.n_ff_shexp = keys.u32_or_unset("expert_shared_feed_forward_length", 0);
    }
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;  // as granite: no `.scale` on the feed-forward block or the experts
    o.expert_gate_optional = true;
    o.rope_factors = "rope_freqs.weight";
    declare_dense_tensors(hp, t, w, o);
    for (uint32_t l = 0; l < hp.n_layer; ++l) t.vector(layer_tensor(l, "attn_sinks.weight"), hp.n_head, &w.layers[l].attn_sinks);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kGraniteSwa{"granite_swa", read_hparams, declare_tensors, forward, reference::llama,
                                        /*supports_experts=*/true};

}  // namespace cria::model::archs
