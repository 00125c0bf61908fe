#pragma once
// What kimi-linear and bailingmoe3 share: Kimi delta attention layers
// (head_count_kv 0, recurrent) between multi-head latent attention layers
// (the absorbed deepseek2 form, one latent KV head), each followed by a
// dense SwiGLU block (the leading layers) or a mixture of experts with a
// shared expert. The two architecture files differ only in the options.

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
};

void read_kda_hybrid_hparams(const HParamsKeys& keys, HParams& hp, const KdaHybridOptions& o);
void declare_kda_hybrid_tensors(const HParams& hp, TensorTable& t, Weights& w, const KdaHybridOptions& o);
void kda_hybrid_forward(blocks::Step& s, float* logits, float* hidden);

}  // namespace cria::model::archs
