// qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): qwen3's attention (an RMSNorm
// over each Q and K head, NeoX rope) with a mixture of SwiGLU experts as the
// feed-forward block: softmax routing, the k weights renormalised, no scale,
// no shared expert. Experts are expert_feed_forward_length wide (0 or
// absent: feed_forward_length / expert_used_count, as llama.cpp).

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
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for qwen3moe");
    hp.n_ff_exp = keys.u32_or_unset("expert_feed_forward_length", hp.n_ff / hp.n_expert_used);
    hp.expert_gating = ExpertGating::Softmax;
    hp.expert_weights_norm = true;
    hp.expert_weights_scale = 0.0f;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.qk_norm = true;
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    blocks::dense_transformer(s, logits, hidden, false, attention, {});
}

}  // namespace

extern const ArchDefinition kQwen3Moe{"qwen3moe", read_hparams, declare_tensors, forward, reference::llama,
                                      /*supports_experts=*/true};

}  // namespace cria::model::archs
