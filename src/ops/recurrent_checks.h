#pragma once
// Argument checks of gated_delta_net and kimi_delta_attention, shared by CpuOps and ReferenceOps so
// both refuse the same calls.

#include "cria/ops/ops.h"

namespace cria::ops {

void check_gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                           const TensorView& beta, const TensorView& state, const TensorView& out);
void check_kimi_delta_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                                const TensorView& beta, const TensorView& state, const TensorView& out);

}  // namespace cria::ops
