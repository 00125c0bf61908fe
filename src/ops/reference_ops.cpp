// Scalar reference ops (see reference_ops.h). Shapes are assumed valid here:
// the tests call these only with arguments CpuOps accepted.

#include "ops/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "cria/core/float16.h"
#include "cria/quant/quantize.h"
#include "ops/checks.h"
#include "ops/moe_detail.h"
#include "ops/softmax_detail.h"

namespace cria::ops {
namespace {

const float* frow(const TensorView& t, int64_t r) { return reinterpret_cast<const float*>(t.row_at(r)); }
float* frow_mut(const TensorView& t, int64_t r) { return reinterpret_cast<float*>(t.row_at(r)); }

// Row `r` of any type as doubles.
std::vector<double> row_values(const TensorView& t, const char* row) {
    const int64_t n = t.ne[0];
    std::vector<float> f(static_cast<size_t>(n));
    switch (t.type) {
        case ElementType::F32: std::memcpy(f.data(), row, f.size() * sizeof(float)); break;
        case ElementType::F16:
            for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
            break;
        case ElementType::BF16:
            for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
            break;
        default: quant::dequantize_row(t.type, row, f.data(), n); break;
    }
    return std::vector<double>(f.begin(), f.end());
}

double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double silu(double x) { return x / (1.0 + std::exp(-x)); }

template <class F>
void unary(const TensorView& x, const TensorView& out, F f) {
    for (int64_t r = 0; r < x.n_rows(); ++r) {
        for (int64_t i = 0; i < x.ne[0]; ++i) frow_mut(out, r)[i] = static_cast<float>(f(static_cast<double>(frow(x, r)[i])));
    }
}

template <class F>
void binary(const TensorView& a, const TensorView& b, const TensorView& out, F f) {
    for (int64_t r = 0; r < a.n_rows(); ++r) {
        const float* pb = frow(b, b.n_rows() == 1 ? 0 : r);
        for (int64_t i = 0; i < a.ne[0]; ++i) {
            frow_mut(out, r)[i] = static_cast<float>(f(static_cast<double>(frow(a, r)[i]), static_cast<double>(pb[i])));
        }
    }
}

}  // namespace

void ReferenceOps::get_rows(const TensorView& table, const int32_t* ids, int64_t n_ids, const TensorView& out) {
    for (int64_t i = 0; i < n_ids; ++i) {
        const std::vector<double> v = row_values(table, table.row_at(ids[i]));
        for (int64_t j = 0; j < table.ne[0]; ++j) frow_mut(out, i)[j] = static_cast<float>(v[static_cast<size_t>(j)]);
    }
}

void ReferenceOps::convert(const TensorView& src, const TensorView& dst) {
    for (int64_t r = 0; r < src.n_rows(); ++r) {
        const float* in = frow(src, r);
        if (dst.type == ElementType::F32) {
            std::memcpy(dst.row_at(r), in, static_cast<size_t>(src.ne[0]) * sizeof(float));
        } else if (dst.type == ElementType::F16) {
            for (int64_t i = 0; i < src.ne[0]; ++i) reinterpret_cast<uint16_t*>(dst.row_at(r))[i] = f32_to_f16(in[i]);
        } else if (dst.type == ElementType::BF16) {
            for (int64_t i = 0; i < src.ne[0]; ++i) reinterpret_cast<uint16_t*>(dst.row_at(r))[i] = f32_to_bf16(in[i]);
        } else {
            quant::quantize_row(dst.type, in, dst.row_at(r), src.ne[0]);
        }
    }
}

void ReferenceOps::rms_norm(const TensorView& x, const float* weight, float eps, const TensorView& out) {
    const int64_t n = x.ne[0];
    for (int64_t r = 0; r < x.n_rows(); ++r) {
        double sum_sq = 0;
        for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(frow(x, r)[i]) * frow(x, r)[i];
        const double s = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) {
            frow_mut(out, r)[i] = static_cast<float>(frow(x, r)[i] * s * (weight ? weight[i] : 1.0));
        }
    }
}

void ReferenceOps::layer_norm(const TensorView& x, const float* weight, const float* bias, float eps,
                              const TensorView& out) {
    const int64_t n = x.ne[0];
    for (int64_t r = 0; r < x.n_rows(); ++r) {
        double mean = 0;
        for (int64_t i = 0; i < n; ++i) mean += frow(x, r)[i];
        mean /= static_cast<double>(n);
        double var = 0;
        for (int64_t i = 0; i < n; ++i) var += (frow(x, r)[i] - mean) * (frow(x, r)[i] - mean);
        var /= static_cast<double>(n);
        const double s = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < n; ++i) {
            frow_mut(out, r)[i] =
                static_cast<float>((frow(x, r)[i] - mean) * s * (weight ? weight[i] : 1.0) + (bias ? bias[i] : 0.0));
        }
    }
}

void ReferenceOps::rope(const TensorView& x, const int32_t* positions, const RopeParams& p, const TensorView& out) {
    // Angles straight from the formulas in double (no running product).
    const int64_t head_dim = x.ne[0], n_heads = x.ne[1], n_tokens = x.ne[2] * x.ne[3];
    const int64_t half = p.n_dims / 2;
    auto corr_dim = [&](double n_rot) {
        return p.n_dims * std::log(p.n_ctx_orig / (n_rot * 2 * std::numbers::pi)) / (2 * std::log(static_cast<double>(p.freq_base)));
    };
    const double low = std::max(0.0, std::floor(corr_dim(p.beta_fast)));
    const double high = std::min(static_cast<double>(p.n_dims - 1), std::ceil(corr_dim(p.beta_slow)));
    const int sect_total = p.sections[0] + p.sections[1] + p.sections[2] + p.sections[3];
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<double> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
        for (int64_t i = 0; i < half; ++i) {
            int kind = 0;  // which position drives this pair: t, h, w, extra
            if (p.order == RopeOrder::MRope) {
                const int sector = static_cast<int>(i % sect_total);
                kind = sector < p.sections[0] ? 0
                       : sector < p.sections[0] + p.sections[1] ? 1
                       : sector < p.sections[0] + p.sections[1] + p.sections[2] ? 2
                                                                                : 3;
            }
            const double pos = positions[t + kind * n_tokens];
            const double inv_freq = std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(i) / p.n_dims);
            const double extrap = pos * inv_freq / (p.freq_factors ? p.freq_factors[i] : 1.0);
            const double interp = p.freq_scale * extrap;
            double angle = interp, mscale = p.attn_factor;
            if (p.ext_factor != 0.0f) {
                const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
                const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
                angle = interp * (1 - mix) + extrap * mix;
                mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
            }
            c[static_cast<size_t>(i)] = std::cos(angle) * mscale;
            s[static_cast<size_t>(i)] = std::sin(angle) * mscale;
        }
        const int64_t i2 = t % x.ne[2], i3 = t / x.ne[2];
        for (int64_t h = 0; h < n_heads; ++h) {
            const float* in = reinterpret_cast<const float*>(x.row(h, i2, i3));
            std::vector<float> y(in, in + head_dim);
            for (int64_t i = 0; i < half; ++i) {
                const int64_t a = p.order == RopeOrder::Normal ? 2 * i : i;
                const int64_t b = p.order == RopeOrder::Normal ? 2 * i + 1 : i + half;
                const double ci = c[static_cast<size_t>(i)], si = s[static_cast<size_t>(i)];
                y[static_cast<size_t>(a)] = static_cast<float>(in[a] * ci - in[b] * si);
                y[static_cast<size_t>(b)] = static_cast<float>(in[a] * si + in[b] * ci);
            }
            std::memcpy(out.row(h, i2, i3), y.data(), y.size() * sizeof(float));
        }
    }
}

void ReferenceOps::softmax(const TensorView& x, const SoftmaxParams& p, const TensorView& out) {
    const int64_t n = x.ne[0];
    for (int64_t r = 0; r < x.n_rows(); ++r) {
        const int64_t i1 = r % x.ne[1], head = (r / x.ne[1]) % x.ne[2];
        std::vector<double> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            double s = static_cast<double>(frow(x, r)[i]) * p.scale;
            if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
            if (p.mask) {
                const char* mrow = p.mask->row(i1 % p.mask->ne[1]);
                const double m = p.mask->type == ElementType::F32 ? reinterpret_cast<const float*>(mrow)[i]
                                                                  : f16_to_f32(reinterpret_cast<const uint16_t*>(mrow)[i]);
                s += alibi_slope(p.max_bias, head, x.ne[2]) * m;
            }
            v[static_cast<size_t>(i)] = s;
        }
        double max = -std::numeric_limits<double>::infinity();
        for (double s : v) max = std::max(max, s);
        const double sink = p.sinks ? p.sinks[head] : -std::numeric_limits<double>::infinity();
        max = std::max(max, sink);
        if (max == -std::numeric_limits<double>::infinity()) {
            for (int64_t i = 0; i < n; ++i) frow_mut(out, r)[i] = 0.0f;
            continue;
        }
        double sum = p.sinks ? std::exp(sink - max) : 0.0;
        for (double s : v) sum += std::exp(s - max);
        for (int64_t i = 0; i < n; ++i) frow_mut(out, r)[i] = static_cast<float>(std::exp(v[static_cast<size_t>(i)] - max) / sum);
    }
}

void ReferenceOps::silu(const TensorView& x, const TensorView& out) { unary(x, out, [](double v) { return ops::silu(v); }); }
void ReferenceOps::gelu(const TensorView& x, const TensorView& out) { unary(x, out, gelu_tanh); }
void ReferenceOps::gelu_erf(const TensorView& x, const TensorView& out) { unary(x, out, ops::gelu_erf); }
void ReferenceOps::swiglu(const TensorView& g, const TensorView& u, const TensorView& out) {
    binary(g, u, out, [](double a, double b) { return ops::silu(a) * b; });
}
void ReferenceOps::geglu(const TensorView& g, const TensorView& u, const TensorView& out) {
    binary(g, u, out, [](double a, double b) { return gelu_tanh(a) * b; });
}
void ReferenceOps::swiglu_oai(const TensorView& g, const TensorView& u, float alpha, float limit,
                              const TensorView& out) {
    binary(g, u, out, [alpha, limit](double a, double b) {
        const double x = std::min<double>(a, limit), y = std::clamp<double>(b, -limit, limit);
        return x / (1.0 + std::exp(-static_cast<double>(alpha) * x)) * (y + 1.0);
    });
}
void ReferenceOps::add(const TensorView& a, const TensorView& b, const TensorView& out) {
    binary(a, b, out, [](double p, double q) { return p + q; });
}
void ReferenceOps::mul(const TensorView& a, const TensorView& b, const TensorView& out) {
    binary(a, b, out, [](double p, double q) { return p * q; });
}
void ReferenceOps::scale(const TensorView& x, float s, const TensorView& out) {
    unary(x, out, [s](double v) { return v * s; });
}

int64_t ReferenceOps::argmax(const TensorView& row) {
    const float* x = frow(row, 0);
    int64_t best = 0;
    bool found = false;
    for (int64_t i = 0; i < row.ne[0]; ++i) {
        if (std::isnan(x[i])) continue;
        if (!found || x[i] > x[best]) best = i, found = true;
    }
    return best;
}

std::vector<std::pair<int32_t, float>> ReferenceOps::top_k(const TensorView& row, int64_t k) {
    std::vector<std::pair<int32_t, float>> all;
    for (int64_t i = 0; i < row.ne[0]; ++i) all.emplace_back(static_cast<int32_t>(i), frow(row, 0)[i]);
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        const bool an = std::isnan(a.second), bn = std::isnan(b.second);
        if (an || bn) return !an && bn;
        return a.second > b.second;
    });
    all.resize(static_cast<size_t>(std::min<int64_t>(k, row.ne[0])));
    return all;
}

void ReferenceOps::attention(const TensorView& q, const TensorView& k, const TensorView& v, const AttentionParams& p,
                             const TensorView& out) {
    const int64_t head_dim = q.ne[0], n_heads = q.ne[1], n_tokens = q.ne[2];
    const int64_t n_kv_heads = k.ne[1], n_kv = k.ne[2], dv = v.ne[0];
    const int64_t group = n_heads / n_kv_heads;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const int64_t pos = p.positions ? p.positions[t] : n_kv - n_tokens + t;
        for (int64_t h = 0; h < n_heads; ++h) {
            const int64_t kvh = h / group;
            const float* qrow = reinterpret_cast<const float*>(q.row(h, t));
            // Full score row, masked entries at -inf.
            std::vector<double> scores(static_cast<size_t>(n_kv), -std::numeric_limits<double>::infinity());
            double max = p.sinks ? static_cast<double>(p.sinks[h]) : -std::numeric_limits<double>::infinity();
            for (int64_t j = 0; j < n_kv; ++j) {
                const bool visible = (!p.causal || j <= pos) && (p.window <= 0 || pos - j < p.window);
                if (!visible) continue;
                const std::vector<double> key = row_values(k, k.row(kvh, j));
                double s = 0;
                for (int64_t i = 0; i < head_dim; ++i) s += qrow[i] * key[static_cast<size_t>(i)];
                s *= p.scale;
                if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
                scores[static_cast<size_t>(j)] = s;
                max = std::max(max, s);
            }
            std::vector<double> acc(static_cast<size_t>(dv), 0.0);
            double sum = 0;
            if (max != -std::numeric_limits<double>::infinity()) {
                if (p.sinks) sum += std::exp(p.sinks[h] - max);
                for (int64_t j = 0; j < n_kv; ++j) {
                    const double w = std::exp(scores[static_cast<size_t>(j)] - max);
                    if (w == 0) continue;
                    sum += w;
                    const std::vector<double> val = row_values(v, v.row(kvh, j));
                    for (int64_t i = 0; i < dv; ++i) acc[static_cast<size_t>(i)] += w * val[static_cast<size_t>(i)];
                }
            }
            float* y = reinterpret_cast<float*>(out.row(h, t));
            for (int64_t i = 0; i < dv; ++i) y[i] = sum > 0 ? static_cast<float>(acc[static_cast<size_t>(i)] / sum) : 0.0f;
        }
    }
}

void ReferenceOps::matmul(const TensorView& w, const TensorView& x, const TensorView& out) {
    for (int64_t r = 0; r < w.ne[1]; ++r) {
        const std::vector<double> wr = row_values(w, w.row(r));
        for (int64_t j = 0; j < x.ne[1]; ++j) {
            double s = 0;
            for (int64_t i = 0; i < w.ne[0]; ++i) s += wr[static_cast<size_t>(i)] * frow(x, j)[i];
            reinterpret_cast<float*>(out.row(j))[r] = static_cast<float>(s);
        }
    }
}

// swiglu into a buffer, then the product: what the fused op must equal.
void ReferenceOps::matmul_swiglu(const TensorView& w, const TensorView& gate, const TensorView& up,
                                 const TensorView& out) {
    std::vector<float> act(static_cast<size_t>(gate.ne[0] * gate.ne[1]));
    const TensorView a = TensorView::contiguous(ElementType::F32, act.data(), {gate.ne[0], gate.ne[1]});
    swiglu(gate, up, a);
    matmul(w, a, out);
}

}  // namespace cria::ops

namespace cria::ops {

// Routing in double: the same steps as CpuOps (moe_detail.h).
void ReferenceOps::moe_route(const TensorView& logits, const MoeRouteParams& p, int32_t* ids,
                             const TensorView& weights) {
    check_moe_route(logits, p, ids, weights);
    const int64_t n_expert = logits.ne[0];
    std::vector<double> pi(static_cast<size_t>(n_expert)), sel(pi.size());
    std::vector<int32_t> order(pi.size());
    for (int64_t t = 0; t < logits.ne[1]; ++t)
        moe_detail::route_token<double>(logits.row_f32(t), n_expert, p, pi.data(), sel.data(), order.data(),
                                        ids + t * p.n_used, weights.row_f32(t));
}

// The definition of mul_mat_id: each (token, slot) multiplied by its expert's matrix, in double.
void ReferenceOps::matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                             const TensorView& out) {
    check_matmul_id(w, x, ids, n_used, out);
    for (int64_t t = 0; t < x.ne[2]; ++t)
        for (int64_t j = 0; j < n_used; ++j) {
            const int64_t e = ids[t * n_used + j];
            const float* xv = reinterpret_cast<const float*>(x.row(j % x.ne[1], t));
            float* y = reinterpret_cast<float*>(out.row(j, t));
            for (int64_t r = 0; r < w.ne[1]; ++r) {
                const std::vector<double> wr = row_values(w, w.row(r, e));
                double s = 0;
                for (int64_t i = 0; i < w.ne[0]; ++i) s += wr[static_cast<size_t>(i)] * xv[i];
                y[r] = static_cast<float>(s);
            }
        }
}

}  // namespace cria::ops
