// mistral3 (dense): the llama block (adjacent-pair RoPE with the optional
// rope_freqs divisors, SwiGLU, optional biases and scales). llama.cpp reads no
// attention.scale for it (1/sqrt(head width)). Its per-position query
// temperature (attention.temperature_scale) is refused until it is
// implemented. With experts (expert_count > 0) it is laid out as Mixtral:
// SwiGLU experts as wide as feed_forward_length (expert gates optional),
// softmax routing, the k weights renormalised, no scale, no shared expert.

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
    if (keys.f32("attention.temperature_scale", 0.0f) != 0.0f)
        keys.fail("attention.temperature_scale (query temperature scaling) is not supported yet");
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

extern const ArchDefinition kMistral3{"mistral3", read_hparams, declare_tensors, forward, reference::llama,
                                      /*supports_experts=*/true};

}  // namespace cria::model::archs
