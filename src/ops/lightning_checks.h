#pragma once
// Argument checks of lightning_attention, shared by CpuOps and ReferenceOps
// so both refuse the same calls.

#include "cria/ops/ops.h"

namespace cria::ops {

void check_lightning_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& state,
                               const LightningParams& params, const TensorView& out);

}  // namespace cria::ops
