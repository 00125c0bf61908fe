#pragma once
// Pieces of softmax shared with the attention kernel and the reference.

#include <cstdint>

namespace cria::ops {

// ALiBi slope of head `head` of `n_heads` (1 when max_bias <= 0), as ggml
// computes it.
float alibi_slope(float max_bias, int64_t head, int64_t n_heads);

}  // namespace cria::ops
