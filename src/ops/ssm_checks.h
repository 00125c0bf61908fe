#pragma once
// Argument checks of the state-space ops (ssm_conv, ssm_scan), shared by
// CpuOps and ReferenceOps so both refuse the same calls.

#include "cria/ops/ops.h"
#include "ops/checks.h"

namespace cria::ops {

// x, out: F32 [C, T]; weight and state given.
inline void check_ssm_conv(const TensorView& x, const float* weight, int64_t kernel, const float* state,
                           const TensorView& out) {
    constexpr const char* op = "ssm_conv";
    require_f32(x, op, "x");
    require_f32(out, op, "out");
    require(x.ne[2] == 1 && x.ne[3] == 1, op, "x must be 2-D [channels, tokens], not " + shape_string(x));
    require_same_shape(x, out, op);
    require(kernel >= 1, op, "the kernel must have at least one tap");
    require(weight != nullptr && (kernel == 1 || state != nullptr), op, "weight or state missing");
}

inline void check_ssm_scan(const TensorView& x, const TensorView& dt, const float* a, const TensorView& b,
                           const TensorView& c, const SsmScanParams& p, const float* state, const TensorView& y) {
    constexpr const char* op = "ssm_scan";
    for (const TensorView* t : {&x, &dt, &b, &c, &y}) {
        require_f32(*t, op, "every tensor");
        require(t->ne[2] == 1 && t->ne[3] == 1, op, "tensors must be 2-D [values, tokens], not " + shape_string(*t));
    }
    require(p.n_state > 0 && p.head_dim > 0 && p.n_head > 0 && p.n_group > 0 && p.n_head % p.n_group == 0, op,
            "sizes must be positive and the groups must divide the heads");
    const int64_t n = x.ne[1];
    require(x.ne[0] == p.head_dim * p.n_head && y.ne[0] == x.ne[0] && y.ne[1] == n, op,
            "x and y must be [head_dim * n_head, T]: " + shape_string(x) + ", " + shape_string(y));
    require(dt.ne[0] == p.n_head && dt.ne[1] == n, op, "dt must be [n_head, T], not " + shape_string(dt));
    require(b.ne[0] == p.n_state * p.n_group && b.ne[1] == n && c.ne[0] == b.ne[0] && c.ne[1] == n, op,
            "B and C must be [n_state * n_group, T]: " + shape_string(b) + ", " + shape_string(c));
    require(a != nullptr && state != nullptr, op, "A or the state is missing");
}

// ggml's softplus: x itself above 20, where log1p(exp(x)) equals x in float.
inline float ssm_softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace cria::ops
