// qwen35 (Qwen3.5 / 3.6 dense): gated delta-net layers (tiled heads, ssm_beta
// and ssm_alpha) between gated attention layers (IMROPE, equal to NeoX rope
// for text), each followed by a dense SwiGLU block; every product times its
// `.scale` when the file has one. See qwen_delta_net.h.

#include "model/archs/qwen_delta_net.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) { read_qwen_delta_net_hparams(keys, hp, {}); }

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) { declare_qwen_delta_net_tensors(hp, t, w, {}); }

}  // namespace

extern const ArchDefinition kQwen35{"qwen35", read_hparams, declare_tensors, qwen_delta_net_forward,
                                    reference::qwen_delta_net};

}  // namespace cria::model::archs
