// qwen2moe (Qwen1.5-MoE, Qwen2-57B-A14B): qwen2's attention (NeoX rope,
// Q/K/V biases) with a mixture of SwiGLU experts: softmax routing without
// renormalisation, no scale, plus a shared expert that every token goes
// through, scaled by sigmoid(ffn_gate_inp_shexp · h). Expert width
// expert_feed_forward_length (0: feed_forward_length / expert_used_count),
// shared width expert_shared_feed_forward_length (0: feed_forward_length).

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for qwen2moe");
    hp.n_ff_exp = keys.u32_or_unset("expert_feed_forward_length", hp.n_ff / hp.n_expert_used);
    hp.n_ff_shexp = keys.u32_or_unset("expert_shared_feed_forward_length", hp.n_ff);
    hp.expert_gating = ExpertGating::Softmax;
    hp.expert_weights_norm = false;
    hp.expert_weights_scale = 0.0f;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.shared_expert_gate = true;
    // As qwen2: llama.cpp's graph passes no `.scale` to the experts or the
    // shared expert (checked on llama.cpp's fixture: applying either is off).
    o.ffn_scales = false;
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kQwen2Moe{"qwen2moe", read_hparams, declare_tensors, forward, reference::llama,
                                      /*supports_experts=*/true};

}  // namespace cria::model::archs
