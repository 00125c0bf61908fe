// Softmax over rows with scale, soft-capping, mask, ALiBi and attention sinks,
// in the order ggml's soft_max_ext applies them.

#include <cmath>
#include <limits>
#include <vector>

#include "cria/core/float16.h"
#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"
#include "ops/parallel.h"
#include "ops/softmax_detail.h"
#include "ops/vec.h"

namespace cria::ops {

float alibi_slope(float max_bias, int64_t head, int64_t n_heads) {
    if (max_bias <= 0.0f) return 1.0f;
    // Slopes for the largest power of two <= n_heads, then interleaved extra ones.
    const int64_t n_head_log2 = int64_t{1} << static_cast<int>(std::floor(std::log2(static_cast<double>(n_heads))));
    const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(n_head_log2));
    const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n_head_log2));
    return head < n_head_log2 ? std::pow(m0, static_cast<float>(head + 1))
                              : std::pow(m1, static_cast<float>(2 * (head - n_head_log2) + 1));
}

void CpuOps::softmax(const TensorView& x, const SoftmaxParams& params, const TensorView& out) {
    require_f32(x, "softmax", "x");
    require_f32(out, "softmax", "out");
    require_same_shape(x, out, "softmax");
    const int64_t n = x.ne[0];
    if (params.mask != nullptr) {
        const TensorView& m = *params.mask;
        require(m.type == ElementType::F32 || m.type == ElementType::F16, "softmax", "mask must be f32 or f16");
        require_data(m, "softmax", "mask");
        require(m.ne[0] >= n && m.ne[1] >= 1, "softmax", "mask " + shape_string(m) + " is smaller than the rows");
    }
    require(params.softcap >= 0.0f, "softmax", "softcap must not be negative");
    const VecKernels& k = vec_kernels();
    std::vector<std::vector<float>> scratch(static_cast<size_t>(pool_.size()));
    for_each_row(pool_, x.n_rows(), n, [&](int64_t r, int thread) {
        std::vector<float>& tmp = scratch[static_cast<size_t>(thread)];
        tmp.resize(static_cast<size_t>(n));
        const int64_t i1 = r % x.ne[1];
        const int64_t head = (r / x.ne[1]) % x.ne[2];
        const float* in = reinterpret_cast<const float*>(x.row_at(r));
        float* y = reinterpret_cast<float*>(out.row_at(r));
        k.scale(in, params.scale, tmp.data(), n);
        if (params.softcap > 0.0f) {
            const float c = params.softcap;
            for (int64_t i = 0; i < n; ++i) tmp[static_cast<size_t>(i)] = c * std::tanh(tmp[static_cast<size_t>(i)] / c);
        }
        if (params.mask != nullptr) {
            const TensorView& m = *params.mask;
            const float slope = alibi_slope(params.max_bias, head, x.ne[2]);
            const char* mrow = m.row(i1 % m.ne[1]);
            if (m.type == ElementType::F32) {
                const float* mf = reinterpret_cast<const float*>(mrow);
                if (slope == 1.0f) {
                    k.add(tmp.data(), mf, tmp.data(), n);
                } else {
                    k.axpy(slope, mf, tmp.data(), n);
                }
            } else {
                k.axpy_f16(slope, reinterpret_cast<const uint16_t*>(mrow), tmp.data(), n);
            }
        }
        float max = k.max(tmp.data(), n);
        const float sink = params.sinks != nullptr ? params.sinks[head] : -std::numeric_limits<float>::infinity();
        if (sink > max) max = sink;
        if (max == -std::numeric_limits<float>::infinity()) {
            // Everything masked: a row of zeros rather than 0/0.
            for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
            return;
        }
        float sum = k.exp_shift_sum(tmp.data(), max, y, n);
        if (params.sinks != nullptr) sum += std::exp(sink - max);
        k.scale(y, 1.0f / sum, y, n);
    });
}

}  // namespace cria::ops
