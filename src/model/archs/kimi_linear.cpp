// kimi-linear (Kimi-Linear-48B-A3B): Kimi delta attention layers (low-rank
// decay and output-gate projections, g = A softplus(a)) between multi-head
// latent attention layers without rope, leading dense layers, then sigmoid-
// gated experts (always renormalised, exp_probs_b) with a shared expert.
// See kda_hybrid.h.

#include "model/archs/kda_hybrid.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) { read_kda_hybrid_hparams(keys, hp, {}); }

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) { declare_kda_hybrid_tensors(hp, t, w, {}); }

}  // namespace

extern const ArchDefinition kKimiLinear{"kimi-linear", read_hparams, declare_tensors, kda_hybrid_forward,
                                        reference::kda_hybrid, /*supports_experts=*/true,
                                        /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
