// ReferenceOps' state-space ops: the definitions of ops.h written out in
// double precision, one channel / head and one token at a time.

#include <cmath>
#include <vector>

#include "ops/reference_ops.h"
#include "ops/ssm_checks.h"

namespace cria::ops {

void ReferenceOps::ssm_conv(const TensorView& x, const float* weight, int64_t kernel, float* state,
                            const TensorView& out) {
    check_ssm_conv(x, weight, kernel, state, out);
    const int64_t n_channels = x.ne[0], n_tokens = x.ne[1], n_prev = kernel - 1;
    for (int64_t ch = 0; ch < n_channels; ++ch) {
        std::vector<double> window;  // X = [state | inputs]
        for (int64_t i = 0; i < n_prev; ++i) window.push_back(state[ch * n_prev + i]);
        for (int64_t t = 0; t < n_tokens; ++t) window.push_back(x.row_f32(t)[ch]);
        for (int64_t t = 0; t < n_tokens; ++t) {
            double sum = 0.0;
            for (int64_t i = 0; i < kernel; ++i) sum += window[static_cast<size_t>(t + i)] * weight[ch * kernel + i];
            out.row_f32(t)[ch] = static_cast<float>(sum);
        }
        for (int64_t i = 0; i < n_prev; ++i)
            state[ch * n_prev + i] = static_cast<float>(window[static_cast<size_t>(n_tokens + i)]);
    }
}

void ReferenceOps::ssm_scan(const TensorView& x, const TensorView& dt, const float* a, const TensorView& b,
                            const TensorView& c, const SsmScanParams& p, float* state, const TensorView& y) {
    check_ssm_scan(x, dt, a, b, c, p, state, y);
    const int64_t N = p.n_state, P = p.head_dim;
    for (int64_t t = 0; t < x.ne[1]; ++t)
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t g = h / (p.n_head / p.n_group);
            const double raw = dt.row_f32(t)[h];
            const double d = raw > 20.0 ? raw : std::log1p(std::exp(raw));
            for (int64_t i = 0; i < P; ++i) {
                const double xv = x.row_f32(t)[h * P + i];
                double sum = 0.0;
                for (int64_t n = 0; n < N; ++n) {
                    const double an = p.scalar_a ? a[h] : a[h * N + n];
                    float& s = state[(h * P + i) * N + n];
                    const double v = s * std::exp(d * an) + double{b.row_f32(t)[g * N + n]} * xv * d;
                    sum += v * c.row_f32(t)[g * N + n];
                    s = static_cast<float>(v);
                }
                y.row_f32(t)[h * P + i] = static_cast<float>(sum);
            }
        }
}

}  // namespace cria::ops
