// qwen35moe (Qwen3.5 / 3.6 with experts): qwen35's layers with a mixture of
// SwiGLU experts (softmax routing, renormalised, the experts' down `.scale`
// applied) and a sigmoid-gated shared expert. See qwen_delta_net.h.

#include "model/archs/qwen_delta_net.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for qwen35moe");
    read_qwen_delta_net_hparams(keys, hp, {});
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) { declare_qwen_delta_net_tensors(hp, t, w, {}); }

}  // namespace

extern const ArchDefinition kQwen35Moe{"qwen35moe", read_hparams, declare_tensors, qwen_delta_net_forward,
                                       reference::qwen_delta_net, /*supports_experts=*/true};

}  // namespace cria::model::archs
