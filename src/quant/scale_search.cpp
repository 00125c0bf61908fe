// Scale searches of the k-quants (see scale_search.h). The float expressions
// keep ggml's evaluation order on purpose: a different association would
// change the last bit of a sum and, now and then, a chosen level.

#include "quant/scale_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/rounding.h"

namespace cria::quant::detail {
namespace {

// The value of largest magnitude (first one on ties), and that magnitude.
struct Extreme {
    float value = 0;
    float magnitude = 0;
};

Extreme largest_magnitude(int n, const float* x) {
    Extreme e;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > e.magnitude) {
            e.magnitude = ax;
            e.value = x[i];
        }
    }
    return e;
}

float qx_weight(const float* weights, const float* x, int i) { return weights ? weights[i] : x[i] * x[i]; }

int clamp_level(int l, int lo, int hi) { return std::max(lo, std::min(hi, l)); }

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* weights) {
    const Extreme e = largest_magnitude(n, x);
    if (e.magnitude < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    const float max = e.value;
    float iscale = static_cast<float>(-nmax) / max;
    // First guess: the plain scale, with the least-squares optimal scale for its levels.
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = qx_weight(weights, x, i);
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;

    // The fit with scale s has error sum(w x^2) - sumlx^2/suml2, so the best
    // candidate maximises sumlx^2/suml2 (compared without dividing).
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = qx_weight(weights, x, i);
            sumlx += w * x[i] * static_cast<float>(l);
            suml2 += w * static_cast<float>(l) * static_cast<float>(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                L[i] = static_cast<int8_t>(nmax + clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool refine) {
    const Extreme e = largest_magnitude(n, x);
    if (e.magnitude < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    const float iscale = static_cast<float>(-nmax) / e.value;
    if (!refine) {
        for (int i = 0; i < n; ++i) {
            L[i] = static_cast<int8_t>(clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1) + nmax);
        }
        return 1 / iscale;
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    // Coordinate descent: move one level at a time to its best value given the
    // others, keeping the move only if the fit improves.
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
            if (slx > 0) {
                float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
                const int new_l = clamp_level(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * static_cast<float>(new_l);
                    sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<int8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

namespace {

// Shared body of make_qkx2_quants / make_qkx3_quants. `Robust` selects the
// qkx3 behaviour: max <= min as the degenerate test, and levels computed
// without overflowing nearest_int. (A template, so that the hot loops carry
// no run-time switch.)
template <bool Robust>
float make_qkx_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                      uint8_t* aux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;  // the offset only ever shifts down
    if (Robust ? max <= min : max == min) {
        std::memset(L, 0, static_cast<size_t>(n));
        *neg_min = -min;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *neg_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l;
            if constexpr (Robust) {
                // min may sit at or near max by now: v can be inf, nan or huge.
                const float v = iscale * (x[i] - min);
                l = v > 0 ? nearest_int(std::min(v, static_cast<float>(nmax))) : 0;
            } else {
                l = clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax);
            }
            aux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            const float lf = static_cast<float>(l);
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        // Weighted least squares for (scale, min) given these levels.
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(aux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                error += weights[i] * diff;
            }
            if (error < best_error) {
                std::memcpy(L, aux, static_cast<size_t>(n));
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

}  // namespace

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* aux, float rmin, float rdelta, int nstep, bool use_mad) {
    return make_qkx_quants<false>(n, nmax, x, weights, L, neg_min, aux, rmin, rdelta, nstep, use_mad);
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* aux, float rmin, float rdelta, int nstep, bool use_mad) {
    return make_qkx_quants<true>(n, nmax, x, weights, L, neg_min, aux, rmin, rdelta, nstep, use_mad);
}

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * static_cast<float>(L[i]);
        best_mse += weights[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * static_cast<float>(l);
            mse += weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearest_int(iscale * x[i]));
        L[i] = static_cast<uint8_t>(l);
        const float w = weights[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = weights[i];
            float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
            float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
            if (slx > 0 && sl2 > 0) {
                const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w * x[i] * static_cast<float>(new_l);
                    sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<uint8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace cria::quant::detail
