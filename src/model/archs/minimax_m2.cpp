// minimax-m2 (MiniMax-M2): an RMSNorm over the whole Q and K vectors (all
// heads jointly, before the split into heads), NeoX rope on the first
// rope.dimension_count dims of each head, and a mixture of SwiGLU experts as
// wide as feed_forward_length: gating from expert_gating_func (files use
// sigmoid), the exp_probs_b selection bias, renormalised weights, no scale,
// no shared expert.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    hp.has_qk_norm = true;
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for minimax-m2");
    hp.n_ff_exp = hp.n_ff;
    switch (keys.u32("expert_gating_func", 0)) {
        case 1: hp.expert_gating = ExpertGating::Softmax; break;
        case 2: hp.expert_gating = ExpertGating::Sigmoid; break;
        case 3: hp.expert_gating = ExpertGating::SoftmaxWeight; break;
        default: keys.fail("'" + keys.key("expert_gating_func") + "' must be 1 (softmax), 2 (sigmoid) or 3");
    }
    hp.expert_weights_norm = true;
    hp.expert_weights_scale = 0.0f;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.qk_norm = true;
    o.qk_norm_full = true;
    o.expert_selection_bias = true;
    // As olmoe: Q, K and V are plain products and the experts get no
    // `.scale` in llama.cpp's graph (found on its fixture; either the other
    // way is off by NMSE > 1e-2).
    o.plain_qkv = true;
    o.ffn_scales = false;
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    blocks::dense_transformer(s, logits, hidden, false, attention, {});
}

}  // namespace

extern const ArchDefinition kMinimaxM2{"minimax-m2", read_hparams, declare_tensors, forward, reference::llama,
                                       /*supports_experts=*/true};

}  // namespace cria::model::archs
