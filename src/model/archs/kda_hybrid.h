#pragma once
// What kimi-linear, bailingmoe3 and kimi-k3 share: Kimi delta attention layers
// (head_count_kv 0, recurrent) between multi-head latent attention layers
// (the absorbed deepseek2 form, one latent KV head), each followed by a
// dense SwiGLU block (the leading layers) or a mixture of experts with a
// shared expert. The architecture files differ only in the options (and
// kimi-k3's forward, which adds its attention residuals).

#include "model/arch.h"
#include "model/hparams_keys.h"
#include "model/tensor_table.h"

namespace cria::model::archs {

struct KdaHybridOptions {
    // kimi-linear: low-rank decay and output-gate projections (ssm_f_a ->
    // ssm_f_b, ssm_g_a -> ssm_g_b), g = A softplus(a), MLA without rope,
    // experts always renormalised, the shared expert optional.
    // bailingmoe3: full-rank ssm_f_a / ssm_g_a, g = lb sigmoid(A a) with the
    // required gate lower bound, roped MLA with a per-head output gate
    // (attn_gate), expert_weights_norm, trained SwiGLU limits, MTP layers
    // after the trunk (loaded, not run).
    bool bailing = false;
    // kimi-k3: kimi-linear's layers with a bounded decay (lb sigmoid(-A a),
    // when kda.gate_lower_bound is set), one full-rank output gate (ssm_g),
    // an optional sigmoid gate per value channel on the MLA output
    // (attn_gate), a low-rank query when attn_q_a_norm is there, situ in
    // place of SwiGLU, routed experts in a latent width (ffn_routed_down /
    // _norm / _up), expert_weights_norm, and the attention residuals'
    // score weights (attn_res.block_size > 0).
    bool kimi_k3 = false;
};

void read_kda_hybrid_hparams(const HParamsKeys& keys, HParams& hp, const KdaHybridOptions& o);
void declare_kda_hybrid_tensors(const HParams& hp, TensorTable& t, Weights& w, const KdaHybridOptions& o);
void kda_hybrid_forward(blocks::Step& s, float* logits, float* hidden);

}  // namespace cria::model::archs
