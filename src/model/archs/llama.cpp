// llama (and Mistral-style files): pre-norm blocks, separate Q/K/V and
// gate/up matrices, SwiGLU feed-forward, RoPE on adjacent pairs with the
// optional Llama 3.1 frequency divisors (rope_freqs). Biases and scales on
// every linear layer are optional. With experts (expert_count > 0) it is
// Mixtral: the feed-forward block is a mixture of SwiGLU experts.

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
    hp.attention_scale = keys.f32_or_unset("attention.scale", hp.attention_scale);
    // With experts (Mixtral): experts as wide as feed_forward_length, softmax
    // routing, the k weights renormalised, no scale (llama.cpp reads neither
    // expert_weights_norm nor expert_weights_scale for llama).
    if (hp.n_expert > 0) {
        hp.n_ff_exp = hp.n_ff;
        hp.expert_gating = ExpertGating::Softmax;
        hp.expert_weights_norm = true;
        hp.expert_weights_scale = 0.0f;
    }
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.rope_factors = "rope_freqs.weight";
    o.expert_gate_optional = true;
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kLlama{"llama", read_hparams, declare_tensors, forward, reference::llama,
                                   /*supports_experts=*/true};

}  // namespace cria::model::archs
