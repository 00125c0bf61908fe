// The state-space kernels of CpuOps: the causal depthwise convolution with
// state and the selective scan (Mamba-1 and Mamba-2). Both are independent
// per channel (conv) or per head (scan) over a whole sequence, so the
// threads take channels / heads and walk every token: each state stays in
// one core's cache for the whole run. The float summation order is ggml's
// (taps in order; state elements in order), so results match llama.cpp's
// CPU backend up to its SIMD reordering.

#include <cmath>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/parallel.h"
#include "ops/ssm_checks.h"

namespace cria::ops {

void CpuOps::ssm_conv(const TensorView& x, const float* weight, int64_t kernel, float* state, const TensorView& out) {
    check_ssm_conv(x, weight, kernel, state, out);
    const int64_t n_channels = x.ne[0], n_tokens = x.ne[1], n_prev = kernel - 1;
    const int64_t chunk = 16;  // channels per task: the inputs gathered per channel are reused K times
    const int64_t n_chunks = (n_channels + chunk - 1) / chunk;
    if (n_tokens == 1) {
        // A decode step: no window to gather, so no scratch to allocate per
        // task; the same products summed in the same order as below.
        const float* xt = x.row_f32(0);
        float* yt = out.row_f32(0);
        for_each_row(pool_, n_chunks, chunk * kernel * 4, [&](int64_t task, int) {
            const int64_t c1 = std::min(n_channels, (task + 1) * chunk);
            for (int64_t ch = task * chunk; ch < c1; ++ch) {
                float* s = state + ch * n_prev;
                const float* w = weight + ch * kernel;
                const float xc = xt[ch];
                float sum = 0.0f;
                for (int64_t i = 0; i < n_prev; ++i) sum += s[i] * w[i];
                sum += xc * w[n_prev];
                yt[ch] = sum;
                for (int64_t i = 0; i + 1 < n_prev; ++i) s[i] = s[i + 1];
                if (n_prev > 0) s[n_prev - 1] = xc;
            }
        });
        return;
    }
    for_each_row(pool_, n_chunks, chunk * (n_tokens + kernel) * kernel, [&](int64_t task, int) {
        std::vector<float> window(static_cast<size_t>(n_prev + n_tokens));
        const int64_t c1 = std::min(n_channels, (task + 1) * chunk);
        for (int64_t ch = task * chunk; ch < c1; ++ch) {
            // [state | inputs] of this channel, then the taps slide over it.
            float* s = state + ch * n_prev;
            for (int64_t i = 0; i < n_prev; ++i) window[static_cast<size_t>(i)] = s[i];
            for (int64_t t = 0; t < n_tokens; ++t) window[static_cast<size_t>(n_prev + t)] = x.row_f32(t)[ch];
            const float* w = weight + ch * kernel;
            for (int64_t t = 0; t < n_tokens; ++t) {
                float sum = 0.0f;
                for (int64_t i = 0; i < kernel; ++i) sum += window[static_cast<size_t>(t + i)] * w[i];
                out.row_f32(t)[ch] = sum;
            }
            for (int64_t i = 0; i < n_prev; ++i) s[i] = window[static_cast<size_t>(n_tokens + i)];
        }
    });
}

void CpuOps::ssm_scan(const TensorView& x, const TensorView& dt, const float* a, const TensorView& b,
                      const TensorView& c, const SsmScanParams& p, float* state, const TensorView& y) {
    check_ssm_scan(x, dt, a, b, c, p, state, y);
    const int64_t n_tokens = x.ne[1], N = p.n_state, P = p.head_dim;
    const int64_t heads_per_group = p.n_head / p.n_group;
    // Mamba-1 has one channel per head: take several per task.
    const int64_t chunk = std::max<int64_t>(1, 1024 / (P * N));
    const int64_t n_chunks = (p.n_head + chunk - 1) / chunk;
    for_each_row(pool_, n_chunks, chunk * P * N * n_tokens, [&](int64_t task, int) {
        const int64_t h1 = std::min(p.n_head, (task + 1) * chunk);
        for (int64_t h = task * chunk; h < h1; ++h) {
            const int64_t g = h / heads_per_group;
            float* sh = state + h * P * N;
            for (int64_t t = 0; t < n_tokens; ++t) {
                const float d = ssm_softplus(dt.row_f32(t)[h]);
                const float* bt = b.row_f32(t) + g * N;
                const float* ct = c.row_f32(t) + g * N;
                const float* xt = x.row_f32(t) + h * P;
                float* yt = y.row_f32(t) + h * P;
                if (p.scalar_a) {
                    const float da = std::exp(d * a[h]);
                    for (int64_t i = 0; i < P; ++i) {
                        const float x_dt = xt[i] * d;
                        float* s = sh + i * N;
                        float sum = 0.0f;
                        for (int64_t n = 0; n < N; ++n) {
                            const float v = s[n] * da + bt[n] * x_dt;
                            sum += v * ct[n];
                            s[n] = v;
                        }
                        yt[i] = sum;
                    }
                } else {
                    const float* ah = a + h * N;
                    for (int64_t i = 0; i < P; ++i) {
                        const float x_dt = xt[i] * d;
                        float* s = sh + i * N;
                        float sum = 0.0f;
                        for (int64_t n = 0; n < N; ++n) {
                            const float v = s[n] * std::exp(d * ah[n]) + bt[n] * x_dt;
                            sum += v * ct[n];
                            s[n] = v;
                        }
                        yt[i] = sum;
                    }
                }
            }
        }
    });
}

}  // namespace cria::ops
