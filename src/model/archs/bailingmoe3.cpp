// bailingmoe3 (Ling/Ring 2.5): Kimi delta attention layers (full-rank decay
// and output-gate projections, the decay bounded below: g = lb sigmoid(A a))
// between roped multi-head latent attention layers with a per-head output
// gate, leading dense layers, then experts with a shared expert, trained
// SwiGLU limits per layer (swiglu_clamp_exp / _shexp). Its MTP layers are
// loaded and not run. See kda_hybrid.h.

#include "model/archs/kda_hybrid.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

constexpr KdaHybridOptions kOptions{/*bailing=*/true};

void read_hparams(const HParamsKeys& keys, HParams& hp) { read_kda_hybrid_hparams(keys, hp, kOptions); }

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    declare_kda_hybrid_tensors(hp, t, w, kOptions);
}

}  // namespace

extern const ArchDefinition kBailingMoe3{"bailingmoe3", read_hparams, declare_tensors, kda_hybrid_forward,
                                         reference::kda_hybrid, /*supports_experts=*/true,
                                         /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
