#pragma once
// The angle of each rotated pair: theta and YaRN's mix of interpolation and
// extrapolation, following ggml's rope_yarn.

#include <cstdint>

#include "cria/ops/ops.h"

namespace cria::ops {

// YaRN correction range [low, high] in dimension-pair units.
void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]);

// Fills cos/sin (n_dims/2 entries) for one token. `positions` points at the
// token's position (for MRope: its t position; h, w, extra follow at strides
// of `n_tokens`).
void rope_angles(const RopeParams& p, const int32_t* positions, int64_t n_tokens, float* cos_out, float* sin_out);

}  // namespace cria::ops
