#include "model/reference/ssm.h"

#include <cmath>

namespace cria::model::reference {
namespace {

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

// RMSNorm with an optional weight (empty: none).
Vec rms_norm_maybe(const Vec& x, const std::vector<float>& weight, double eps) {
    double sum_sq = 0.0;
    for (double v : x) sum_sq += v * v;
    const double scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * (weight.empty() ? 1.0 : weight[i]);
    return y;
}

// silu(conv(u) + bias) of every position, channel by channel; u holds the
// convolution's inputs (position-major), the history before position 0 is zero.
Rows causal_conv(const Rows& u, const std::vector<float>& taps, const std::vector<float>& bias, uint32_t kernel) {
    const size_t n = u.size(), channels = u.empty() ? 0 : u[0].size();
    Rows out(n, Vec(channels));
    for (size_t t = 0; t < n; ++t)
        for (size_t c = 0; c < channels; ++c) {
            double sum = bias.empty() ? 0.0 : bias[c];
            for (uint32_t i = 0; i < kernel; ++i) {
                const int64_t src = static_cast<int64_t>(t) - static_cast<int64_t>(kernel - 1) + i;
                if (src >= 0) sum += taps[c * kernel + i] * u[static_cast<size_t>(src)][c];
            }
            out[t][c] = silu(sum);
        }
    return out;
}

}  // namespace

Rows mamba_mixer(const Input& in, uint32_t layer, const Rows& h) {
    const HParams& hp = in.hp;
    const SsmWeights& w = in.w.layers[layer].ssm;
    const uint32_t d_inner = hp.ssm_inner, N = hp.ssm_state, R = hp.ssm_dt_rank;
    const double eps = hp.norm_rms_eps;
    const Linear proj(w.in), x_proj(w.x), dt_proj(w.dt), out_proj(w.out);
    const size_t n = h.size();

    Rows xs(n), zs(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec xz = proj(h[t]);
        xs[t] = slice(xz, 0, d_inner);
        zs[t] = slice(xz, d_inner, d_inner);
    }
    const Rows xc = causal_conv(xs, w.conv, w.conv_bias, hp.ssm_conv_kernel);

    std::vector<double> state(static_cast<size_t>(d_inner) * N, 0.0);  // (c, n) at c*N + n
    Rows out(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec xdb = x_proj(xc[t]);
        Vec dt_r = slice(xdb, 0, R), b = slice(xdb, R, N), c = slice(xdb, R + N, N);
        if (hp.ssm_dt_b_c_rms || !w.dt_norm.empty()) {
            dt_r = rms_norm_maybe(dt_r, w.dt_norm, eps);
            b = rms_norm_maybe(b, w.b_norm, eps);
            c = rms_norm_maybe(c, w.c_norm, eps);
        }
        const Vec dt = dt_proj(dt_r);
        Vec y(d_inner);
        for (uint32_t ch = 0; ch < d_inner; ++ch) {
            const double d = softplus(dt[ch]);
            double sum = 0.0;
            for (uint32_t k = 0; k < N; ++k) {
                double& s = state[static_cast<size_t>(ch) * N + k];
                s = s * std::exp(d * w.a[static_cast<size_t>(ch) * N + k]) + b[k] * xc[t][ch] * d;
                sum += s * c[k];
            }
            y[ch] = (sum + w.d[ch] * xc[t][ch]) * silu(zs[t][ch]);
        }
        out[t] = out_proj(y);
    }
    return out;
}

Rows mamba2_mixer(const Input& in, uint32_t layer, const Rows& h) {
    const HParams& hp = in.hp;
    const SsmWeights& w = in.w.layers[layer].ssm;
    const uint32_t d_inner = hp.ssm_inner, N = hp.ssm_state, H = hp.ssm_dt_rank, G = hp.ssm_groups;
    const uint32_t P = d_inner / H, gn = G * N, d_xbc = d_inner + 2 * gn;
    const double eps = hp.norm_rms_eps;
    const Linear proj(w.in), out_proj(w.out);
    const size_t n = h.size();

    Rows zs(n), xbc_in(n), dts(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec all = proj(h[t]);  // [z | xBC | dt]
        zs[t] = slice(all, 0, d_inner);
        xbc_in[t] = slice(all, d_inner, d_xbc);
        dts[t] = slice(all, d_inner + d_xbc, H);
    }
    const Rows xbc = causal_conv(xbc_in, w.conv, w.conv_bias, hp.ssm_conv_kernel);

    std::vector<double> state(static_cast<size_t>(N) * d_inner, 0.0);  // (h, p, n) at (h*P + p)*N + n
    Rows out(n);
    for (size_t t = 0; t < n; ++t) {
        Vec y(d_inner);
        for (uint32_t hd = 0; hd < H; ++hd) {
            const uint32_t g = hd / (H / G);
            const double d = softplus(dts[t][hd] + w.dt_bias[hd]);
            const double decay = std::exp(d * w.a[hd]);
            for (uint32_t p = 0; p < P; ++p) {
                const uint32_t ch = hd * P + p;
                const double x = xbc[t][ch];
                double sum = 0.0;
                for (uint32_t k = 0; k < N; ++k) {
                    double& s = state[static_cast<size_t>(ch) * N + k];
                    s = s * decay + xbc[t][d_inner + g * N + k] * x * d;
                    sum += s * xbc[t][d_inner + gn + g * N + k];
                }
                y[ch] = (sum + w.d[hd] * x) * silu(zs[t][ch]);
            }
        }
        if (!w.norm.empty()) {  // RMSNorm over each group of d_inner / G channels, then the weights
            const uint32_t width = d_inner / G;
            for (uint32_t g = 0; g < G; ++g) {
                const Vec part = rms_norm(slice(y, g * width, width),
                                          std::vector<float>(w.norm.begin() + g * width, w.norm.begin() + (g + 1) * width), eps);
                for (uint32_t i = 0; i < width; ++i) y[g * width + i] = part[i];
            }
        }
        out[t] = out_proj(y);
    }
    return out;
}

}  // namespace cria::model::reference
