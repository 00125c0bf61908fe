// RMSNorm and LayerNorm over rows.

#include <cmath>
#include <string>

#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"
#include "ops/parallel.h"
#include "ops/vec.h"

namespace cria::ops {

void CpuOps::rms_norm(const TensorView& x, const float* weight, float eps, const TensorView& out) {
    require_f32(x, "rms_norm", "x");
    require_f32(out, "rms_norm", "out");
    require_same_shape(x, out, "rms_norm");
    require(eps >= 0.0f, "rms_norm", "eps must not be negative");
    const VecKernels& k = vec_kernels();
    const int64_t n = x.ne[0];
    for_each_row(pool_, x.n_rows(), n, [&](int64_t r, int) {
        const float* in = reinterpret_cast<const float*>(x.row_at(r));
        float* y = reinterpret_cast<float*>(out.row_at(r));
        const float mean_sq = n > 0 ? k.sum_squares(in, n) / static_cast<float>(n) : 0.0f;
        const float s = 1.0f / std::sqrt(mean_sq + eps);
        if (weight != nullptr) {
            k.scale_mul(in, s, weight, y, n);
        } else {
            k.scale(in, s, y, n);
        }
    });
}

void CpuOps::layer_norm(const TensorView& x, const float* weight, const float* bias, float eps,
                        const TensorView& out) {
    require_f32(x, "layer_norm", "x");
    require_f32(out, "layer_norm", "out");
    require_same_shape(x, out, "layer_norm");
    require(eps >= 0.0f, "layer_norm", "eps must not be negative");
    const VecKernels& k = vec_kernels();
    const int64_t n = x.ne[0];
    for_each_row(pool_, x.n_rows(), n, [&](int64_t r, int) {
        const float* in = reinterpret_cast<const float*>(x.row_at(r));
        float* y = reinterpret_cast<float*>(out.row_at(r));
        if (n == 0) return;
        const float mean = k.sum(in, n) / static_cast<float>(n);
        // Two passes (subtract the mean first): the variance of values with a
        // large mean would lose everything to cancellation otherwise.
        for (int64_t i = 0; i < n; ++i) y[i] = in[i] - mean;
        const float var = k.sum_squares(y, n) / static_cast<float>(n);
        const float s = 1.0f / std::sqrt(var + eps);
        if (weight != nullptr) {
            k.scale_mul(y, s, weight, y, n);
        } else {
            k.scale(y, s, y, n);
        }
        if (bias != nullptr) k.add(y, bias, y, n);
    });
}

}  // namespace cria::ops
