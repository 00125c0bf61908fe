// Rotary position embedding: normal and NeoX pair orders, partial rotation,
// frequency factors, YaRN, multi-section (M-RoPE). The angle math follows
// ggml's rope_yarn; theta advances by a running product as ggml's does.

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"
#include "ops/parallel.h"
#include "ops/rope_detail.h"

namespace cria::ops {
namespace {

float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return static_cast<float>(n_dims) *
           std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int64_t pair) {
    const float y = (static_cast<float>(pair) - low) / std::max(0.001f, high - low);
    return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]) {
    const float start = std::floor(corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    const float end = std::ceil(corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    dims[0] = std::max(0.0f, start);
    dims[1] = std::min(static_cast<float>(n_dims - 1), end);
}

void rope_angles(const RopeParams& p, const int32_t* positions, int64_t n_tokens, float* cos_out, float* sin_out) {
    const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
    float corr[2] = {0.0f, 0.0f};
    rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, corr);
    const bool mrope = p.order == RopeOrder::MRope;
    // Running thetas: one per position kind (t, h, w, extra) for M-RoPE.
    float theta[4] = {static_cast<float>(positions[0]), 0, 0, 0};
    if (mrope) {
        for (int s = 1; s < 4; ++s) theta[s] = static_cast<float>(positions[s * n_tokens]);
    }
    const int sect_total = p.sections[0] + p.sections[1] + p.sections[2] + p.sections[3];
    const int sec_w = p.sections[0] + p.sections[1];
    for (int64_t i = 0; i < p.n_dims / 2; ++i) {
        float theta_base = theta[0];
        if (mrope) {
            const int sector = static_cast<int>(i % sect_total);
            if (sector >= p.sections[0] && sector < sec_w) {
                theta_base = theta[1];
            } else if (sector >= sec_w && sector < sec_w + p.sections[2]) {
                theta_base = theta[2];
            } else if (sector >= sec_w + p.sections[2]) {
                theta_base = theta[3];
            }
        }
        const float ff = p.freq_factors != nullptr ? p.freq_factors[i] : 1.0f;
        const float theta_extrap = theta_base / ff;
        const float theta_interp = p.freq_scale * theta_extrap;
        float angle = theta_interp;
        float mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float mix = yarn_ramp(corr[0], corr[1], i) * p.ext_factor;
            angle = theta_interp * (1.0f - mix) + theta_extrap * mix;
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        cos_out[i] = std::cos(angle) * mscale;
        sin_out[i] = std::sin(angle) * mscale;
        for (float& t : theta) t *= theta_scale;
    }
}

std::vector<float> llama3_frequency_factors(int n_dims, float freq_base, float factor, float low_freq_factor,
                                            float high_freq_factor, int original_context) {
    require(n_dims > 0 && n_dims % 2 == 0, "llama3_frequency_factors", "n_dims must be even and positive");
    require(factor > 0 && low_freq_factor > 0 && high_freq_factor > low_freq_factor && original_context > 0,
            "llama3_frequency_factors", "invalid scaling parameters");
    const double low_freq_wavelen = original_context / static_cast<double>(low_freq_factor);
    const double high_freq_wavelen = original_context / static_cast<double>(high_freq_factor);
    std::vector<float> factors(static_cast<size_t>(n_dims / 2));
    for (int i = 0; i < n_dims / 2; ++i) {
        const double freq = 1.0 / std::pow(static_cast<double>(freq_base), 2.0 * i / n_dims);
        const double wavelen = 2.0 * std::numbers::pi / freq;
        double f;
        if (wavelen < high_freq_wavelen) {
            f = 1.0;  // high frequencies: unchanged
        } else if (wavelen > low_freq_wavelen) {
            f = factor;  // low frequencies: fully interpolated
        } else {
            const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
        factors[static_cast<size_t>(i)] = static_cast<float>(f);
    }
    return factors;
}

void CpuOps::rope(const TensorView& x, const int32_t* positions, const RopeParams& p, const TensorView& out) {
    require_f32(x, "rope", "x");
    require_f32(out, "rope", "out");
    require_same_shape(x, out, "rope");
    require(positions != nullptr, "rope", "positions are missing");
    require(p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= x.ne[0], "rope",
            "n_dims must be even, positive and at most the head size");
    require(p.freq_base > 0.0f && p.freq_scale > 0.0f, "rope", "freq_base and freq_scale must be positive");
    if (p.order == RopeOrder::MRope) {
        require(p.sections[0] + p.sections[1] + p.sections[2] + p.sections[3] > 0, "rope", "M-RoPE needs sections");
    }
    const int64_t head_dim = x.ne[0];
    const int64_t n_heads = x.ne[1];
    const int64_t n_tokens = x.ne[2] * x.ne[3];
    const int64_t half = p.n_dims / 2;
    std::vector<std::vector<float>> scratch(static_cast<size_t>(pool_.size()));
    // One task per token: the angles are computed once and used for all heads.
    for_each_row(pool_, n_tokens, head_dim * n_heads, [&](int64_t t, int thread) {
        std::vector<float>& cs = scratch[static_cast<size_t>(thread)];
        cs.resize(static_cast<size_t>(2 * half));
        float* c = cs.data();
        float* s = cs.data() + half;
        rope_angles(p, positions + t, n_tokens, c, s);
        const int64_t i2 = t % x.ne[2], i3 = t / x.ne[2];
        for (int64_t h = 0; h < n_heads; ++h) {
            const float* in = reinterpret_cast<const float*>(x.row(h, i2, i3));
            float* y = reinterpret_cast<float*>(out.row(h, i2, i3));
            if (p.order == RopeOrder::Normal) {
                for (int64_t i = 0; i < half; ++i) {
                    const float a = in[2 * i], b = in[2 * i + 1];
                    y[2 * i] = a * c[i] - b * s[i];
                    y[2 * i + 1] = a * s[i] + b * c[i];
                }
            } else {
                for (int64_t i = 0; i < half; ++i) {
                    const float a = in[i], b = in[i + half];
                    y[i] = a * c[i] - b * s[i];
                    y[i + half] = a * s[i] + b * c[i];
                }
            }
            if (y != in) {
                for (int64_t i = p.n_dims; i < head_dim; ++i) y[i] = in[i];
            }
        }
    });
}

}  // namespace cria::ops
