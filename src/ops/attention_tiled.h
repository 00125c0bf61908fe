#pragma once
// Attention for many query tokens at once (prompt processing): tiles of
// query rows against blocks of keys, so each key and value block is
// converted to f32 once per tile and both products (scores Q K^T and the
// weighted values P V) are small matrix products. CpuOps::attention checks
// the arguments and picks this path or the one-query-row path.

#include "cria/cpu/thread_pool.h"
#include "cria/ops/ops.h"

namespace cria::ops {

// Query tokens from which the tiled path is used: below it, a tile is too
// short to repay converting each key block (decode steps stay row by row).
constexpr int64_t kTiledAttentionMinTokens = 4;

// Same contract as Ops::attention; arguments already checked.
void attention_tiled(cpu::ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                     const AttentionParams& params, const TensorView& out);

}  // namespace cria::ops
