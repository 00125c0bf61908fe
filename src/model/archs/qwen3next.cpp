// qwen3next (Qwen3-Next-80B-A3B): gated delta-net layers with grouped heads
// (value head h reads key head h / (n_v / n_k)) and beta / alpha from one
// ssm_ba matrix, gated attention layers with NeoX rope, and a mixture of
// experts with a sigmoid-gated shared expert after every layer. See
// qwen_delta_net.h.

#include "model/archs/qwen_delta_net.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

constexpr QwenDeltaNetOptions kOptions{.qwen3next = true};

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for qwen3next");
    read_qwen_delta_net_hparams(keys, hp, kOptions);
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    declare_qwen_delta_net_tensors(hp, t, w, kOptions);
}

}  // namespace

extern const ArchDefinition kQwen3Next{"qwen3next", read_hparams, declare_tensors, qwen_delta_net_forward,
                                       reference::qwen_delta_net, /*supports_experts=*/true};

}  // namespace cria::model::archs
