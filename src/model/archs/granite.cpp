// granite (dense): the llama block with four scales. Token embeddings times
// embedding_scale, each block's output times residual_scale before its
// residual add (both 0: not set), attention scores times attention.scale
// (0: 1/sqrt(head width)), logits divided by logit_scale (required).
// rope.scaling.finetuned = false (default true) switches RoPE off in every
// layer. granitemoe is the same family (llama.cpp builds both with one
// graph); either with experts (expert_count > 0) has a mixture of SwiGLU
// experts as wide as feed_forward_length (expert gates optional): softmax
// routing, the k weights renormalised, no scale, plus an ungated shared
// expert when expert_shared_feed_forward_length > 0 (Granite MoE Shared). The
// residual scale multiplies the mixture's output too.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::Normal;
    if (keys.has_tensor("rope_freqs.weight")) hp.rope_factors_tensor = "rope_freqs.weight";
    if (!keys.has("logit_scale")) keys.fail("missing required key '" + keys.key("logit_scale") + "'");
    const float logit_scale = keys.f32("logit_scale", 1.0f);
    if (logit_scale == 0.0f)
        keys.fail("'" + keys.key("logit_scale") + "' must not be 0 (the logits are divided by it)");
    hp.logit_multiplier = 1.0f / logit_scale;
    hp.residual_scale = keys.f32("residual_scale", 0.0f);
    hp.embedding_scale = keys.f32("embedding_scale", 0.0f);
    hp.attention_scale = keys.f32_or_unset("attention.scale", hp.attention_scale);
    if (!keys.boolean("rope.scaling.finetuned", true)) hp.nope_layers.assign(hp.n_layer, true);
    if (hp.n_expert > 0) {
        hp.n_ff_exp = hp.n_ff;
        hp.expert_gating = ExpertGating::Softmax;
        hp.expert_weights_norm = true;
        hp.expert_weights_scale = 0.0f;  // llama.cpp never reads expert_weights_scale for granite
        hp.n_ff_shexp = keys.u32_or_unset("expert_shared_feed_forward_length", 0);
    }
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;  // llama.cpp's granite graph passes no scales to its feed-forward block or experts
    o.expert_gate_optional = true;
    o.rope_factors = "rope_freqs.weight";
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kGranite{"granite", read_hparams, declare_tensors, forward, reference::llama,
                                     /*supports_experts=*/true};
extern const ArchDefinition kGraniteMoe{"granitemoe", read_hparams, declare_tensors, forward, reference::llama,
                                        /*supports_experts=*/true};

}  // namespace cria::model::archs
