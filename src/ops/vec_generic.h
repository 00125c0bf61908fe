#pragma once
// Generic bodies of the row primitives (see vec.h), written once over a
// vector-traits type S that provides:
//   S::kWidth, S::V, zero(), set1(f), load(p), store(p, v),
//   load_partial(p, n, fill) / store_partial(p, v, n) for tails,
//   load_f16(p) / load_bf16(p) (+ _partial), add, sub, mul, fma(a, b, c) = a*b+c,
//   max, div, reduce_add(v), reduce_max(v), exp(v);
// and, for the vector GELU-erf (not needed when kWidth == 1): abs(v), min(a, b)
// (b where either is NaN, like minps), select_lt(a, b, t, f) = a < b ? t : f
// per lane (false for NaN), with fma fused (one rounding).
// Included only from files compiled for the matching instruction set, and
// instantiated with a traits type of internal linkage, so the AVX2 and AVX-512
// instantiations never merge.

#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/vec.h"

namespace cria::ops::generic {

template <class S>
float dot(const float* a, const float* b, int64_t n) {
    typename S::V acc0 = S::zero(), acc1 = S::zero();
    int64_t i = 0;
    for (; i + 2 * S::kWidth <= n; i += 2 * S::kWidth) {
        acc0 = S::fma(S::load(a + i), S::load(b + i), acc0);
        acc1 = S::fma(S::load(a + i + S::kWidth), S::load(b + i + S::kWidth), acc1);
    }
    for (; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        acc0 = S::fma(S::load_partial(a + i, m, 0.0f), S::load_partial(b + i, m, 0.0f), acc0);
    }
    return S::reduce_add(S::add(acc0, acc1));
}

template <class S, bool kBf16>
float dot_half(const float* a, const uint16_t* b, int64_t n) {
    typename S::V acc0 = S::zero(), acc1 = S::zero();
    int64_t i = 0;
    for (; i + 2 * S::kWidth <= n; i += 2 * S::kWidth) {
        const typename S::V b0 = kBf16 ? S::load_bf16_partial(b + i, S::kWidth) : S::load_f16_partial(b + i, S::kWidth);
        const typename S::V b1 = kBf16 ? S::load_bf16_partial(b + i + S::kWidth, S::kWidth)
                                       : S::load_f16_partial(b + i + S::kWidth, S::kWidth);
        acc0 = S::fma(S::load(a + i), b0, acc0);
        acc1 = S::fma(S::load(a + i + S::kWidth), b1, acc1);
    }
    for (; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        const typename S::V vb = kBf16 ? S::load_bf16_partial(b + i, m) : S::load_f16_partial(b + i, m);
        acc0 = S::fma(m == S::kWidth ? S::load(a + i) : S::load_partial(a + i, m, 0.0f), vb, acc0);
    }
    return S::reduce_add(S::add(acc0, acc1));
}

template <class S>
float sum_squares(const float* x, int64_t n) {
    typename S::V acc0 = S::zero(), acc1 = S::zero();
    int64_t i = 0;
    for (; i + 2 * S::kWidth <= n; i += 2 * S::kWidth) {
        const typename S::V v0 = S::load(x + i), v1 = S::load(x + i + S::kWidth);
        acc0 = S::fma(v0, v0, acc0);
        acc1 = S::fma(v1, v1, acc1);
    }
    for (; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        const typename S::V v = m == S::kWidth ? S::load(x + i) : S::load_partial(x + i, m, 0.0f);
        acc0 = S::fma(v, v, acc0);
    }
    return S::reduce_add(S::add(acc0, acc1));
}

template <class S>
float sum(const float* x, int64_t n) {
    typename S::V acc = S::zero();
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        acc = S::add(acc, m == S::kWidth ? S::load(x + i) : S::load_partial(x + i, m, 0.0f));
    }
    return S::reduce_add(acc);
}

template <class S>
float max(const float* x, int64_t n) {
    const float lowest = -std::numeric_limits<float>::infinity();
    typename S::V acc = S::set1(lowest);
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        acc = S::max(acc, m == S::kWidth ? S::load(x + i) : S::load_partial(x + i, m, lowest));
    }
    return S::reduce_max(acc);
}

// Applies a vector map over full and partial vectors.
template <class S, class F>
void map1(const float* x, float* y, int64_t n, F f) {
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        if (m == S::kWidth) {
            S::store(y + i, f(S::load(x + i)));
        } else {
            S::store_partial(y + i, f(S::load_partial(x + i, m, 0.0f)), m);
        }
    }
}

template <class S, class F>
void map2(const float* a, const float* b, float* y, int64_t n, F f) {
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        if (m == S::kWidth) {
            S::store(y + i, f(S::load(a + i), S::load(b + i)));
        } else {
            S::store_partial(y + i, f(S::load_partial(a + i, m, 0.0f), S::load_partial(b + i, m, 0.0f)), m);
        }
    }
}

template <class S>
void scale(const float* x, float s, float* y, int64_t n) {
    const typename S::V vs = S::set1(s);
    map1<S>(x, y, n, [vs](typename S::V v) { return S::mul(v, vs); });
}

template <class S>
void scale_mul(const float* x, float s, const float* w, float* y, int64_t n) {
    const typename S::V vs = S::set1(s);
    map2<S>(x, w, y, n, [vs](typename S::V a, typename S::V b) { return S::mul(S::mul(a, vs), b); });
}

template <class S>
void axpy(float a, const float* x, float* y, int64_t n) {
    const typename S::V va = S::set1(a);
    map2<S>(x, y, y, n, [va](typename S::V vx, typename S::V vy) { return S::fma(va, vx, vy); });
}

template <class S, bool kBf16>
void axpy_half(float a, const uint16_t* x, float* y, int64_t n) {
    const typename S::V va = S::set1(a);
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        const typename S::V vx = kBf16 ? S::load_bf16_partial(x + i, m) : S::load_f16_partial(x + i, m);
        if (m == S::kWidth) {
            S::store(y + i, S::fma(va, vx, S::load(y + i)));
        } else {
            S::store_partial(y + i, S::fma(va, vx, S::load_partial(y + i, m, 0.0f)), m);
        }
    }
}

template <class S>
void add(const float* a, const float* b, float* y, int64_t n) {
    map2<S>(a, b, y, n, [](typename S::V p, typename S::V q) { return S::add(p, q); });
}

template <class S>
void mul(const float* a, const float* b, float* y, int64_t n) {
    map2<S>(a, b, y, n, [](typename S::V p, typename S::V q) { return S::mul(p, q); });
}

template <class S>
float exp_shift_sum(const float* x, float shift, float* y, int64_t n) {
    const typename S::V vs = S::set1(shift);
    typename S::V acc = S::zero();
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        if (m == S::kWidth) {
            const typename S::V e = S::exp(S::sub(S::load(x + i), vs));
            S::store(y + i, e);
            acc = S::add(acc, e);
        } else {
            // Padding with -inf makes the padded lanes exp(-inf) = 0.
            const typename S::V e =
                S::exp(S::sub(S::load_partial(x + i, m, -std::numeric_limits<float>::infinity()), vs));
            S::store_partial(y + i, e, m);
            acc = S::add(acc, e);
        }
    }
    return S::reduce_add(acc);
}

template <class S>
typename S::V silu_v(typename S::V x) {
    const typename S::V one = S::set1(1.0f);
    return S::div(x, S::add(one, S::exp(S::sub(S::zero(), x))));
}

template <class S>
void silu(const float* x, float* y, int64_t n) {
    map1<S>(x, y, n, [](typename S::V v) { return silu_v<S>(v); });
}

template <class S>
void swiglu(const float* gate, const float* up, float* y, int64_t n) {
    map2<S>(gate, up, y, n, [](typename S::V g, typename S::V u) { return S::mul(silu_v<S>(g), u); });
}

template <class S>
typename S::V gelu_v(typename S::V x) {
    // -2 * sqrt(2/pi) and -2 * sqrt(2/pi) * 0.044715.
    const typename S::V c1 = S::set1(-1.5957691216057308f);
    const typename S::V c3 = S::set1(-0.0713548162726009f);
    const typename S::V x2 = S::mul(x, x);
    const typename S::V minus_2z = S::mul(x, S::fma(c3, x2, c1));
    return S::div(x, S::add(S::set1(1.0f), S::exp(minus_2z)));
}

template <class S>
void gelu(const float* x, float* y, int64_t n) {
    map1<S>(x, y, n, [](typename S::V v) { return gelu_v<S>(v); });
}

template <class S>
void geglu(const float* gate, const float* up, float* y, int64_t n) {
    map2<S>(gate, up, y, n, [](typename S::V g, typename S::V u) { return S::mul(gelu_v<S>(g), u); });
}

// ---- GELU with erf -------------------------------------------------------------
// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x phi(x), with phi = 1 + erf for
// small |x| and the tail T = erfc(|x| / sqrt 2) beyond: phi = T for x < 0 (no
// cancellation), 2 - T for x > 0. The polynomials are our own Chebyshev fits
// (interpolation at Chebyshev nodes, about 1 ulp each in float):
//   |x| < 0.75:      erf(x / sqrt 2) = x * A(x^2)
//   0.75 <= |x| < 3: T = exp(-x^2/2) * B(|x| - 1.875)
//   |x| >= 3:        T = exp(-x^2/2) / |x| * C(1 / x^2)
// x^2/2 is carried exactly (the fma gives the rounding error of x*x, which
// enters as exp(-e/2 - err/2) = exp(-e/2) (1 - err/2)): rounding -x^2/2 to a
// float would cost up to |x|^2 * 2^-24 relative, 100 ulp near x = -13.
// Results: within 5 ulp of the exact value down to x = -13.2, where exp
// flushes to 0 and gelu gives -0 instead of denormals (|error| < 1e-38);
// -inf gives -0 (not -inf * 0), +inf gives +inf, NaN stays NaN.
template <class S>
typename S::V gelu_erf_v(typename S::V x) {
    using V = typename S::V;
    const V a = S::min(S::abs(x), S::set1(14.0f));  // beyond 13.2 the tail is 0 anyway; keeps inf out

    const V x2 = S::mul(x, x);
    V pa = S::set1(-1.67817871e-05f);
    pa = S::fma(pa, x2, S::set1(0.000229563753f));
    pa = S::fma(pa, x2, S::set1(-0.00237427931f));
    pa = S::fma(pa, x2, S::set1(0.019947065f));
    pa = S::fma(pa, x2, S::set1(-0.132980764f));
    pa = S::fma(pa, x2, S::set1(0.797884583f));
    const V phi_small = S::fma(x, pa, S::set1(1.0f));

    const V t = S::sub(a, S::set1(1.875f));
    V pb = S::set1(1.5359642e-06f);
    pb = S::fma(pb, t, S::set1(-6.72867918e-06f));
    pb = S::fma(pb, t, S::set1(2.31597769e-05f));
    pb = S::fma(pb, t, S::set1(-9.305821e-05f));
    pb = S::fma(pb, t, S::set1(0.000365189655f));
    pb = S::fma(pb, t, S::set1(-0.00134684844f));
    pb = S::fma(pb, t, S::set1(0.00471384171f));
    pb = S::fma(pb, t, S::set1(-0.0155684818f));
    pb = S::fma(pb, t, S::set1(0.0480467826f));
    pb = S::fma(pb, t, S::set1(-0.136793733f));
    pb = S::fma(pb, t, S::set1(0.352581769f));

    const V inv = S::div(S::set1(1.0f), a);
    const V w = S::mul(inv, inv);
    V pc = S::set1(16772.9355f);
    pc = S::fma(pc, w, S::set1(-10119.0762f));
    pc = S::fma(pc, w, S::set1(2824.63379f));
    pc = S::fma(pc, w, S::set1(-513.493469f));
    pc = S::fma(pc, w, S::set1(76.4634476f));
    pc = S::fma(pc, w, S::set1(-11.8311567f));
    pc = S::fma(pc, w, S::set1(2.39228988f));
    pc = S::fma(pc, w, S::set1(-0.7978791f));
    pc = S::fma(pc, w, S::set1(0.797884583f));
    pc = S::div(pc, a);

    const V e = S::mul(a, a);
    const V err = S::fma(a, a, S::sub(S::zero(), e));  // a^2 = e + err exactly
    const V g0 = S::exp(S::mul(e, S::set1(-0.5f)));
    const V g = S::fma(g0, S::mul(err, S::set1(-0.5f)), g0);
    const V tail = S::mul(g, S::select_lt(a, S::set1(3.0f), pb, pc));

    const V phi_large = S::select_lt(x, S::zero(), tail, S::sub(S::set1(2.0f), tail));
    const V phi = S::select_lt(a, S::set1(0.75f), phi_small, phi_large);
    const V y = S::mul(S::mul(x, S::set1(0.5f)), phi);
    return S::select_lt(x, S::set1(-14.0f), S::set1(-0.0f), y);
}

// The scalar level keeps libm's erfc, in double (the vector code's reference
// quality without its polynomial), with the same -inf -> -0. A template like
// everything here, so each instruction set's copy stays its own.
template <class S>
float gelu_erf_scalar(float x) {
    if (x < -14.0f) return -0.0f;
    const double xd = x;
    return static_cast<float>(0.5 * xd * std::erfc(-xd * 0.70710678118654752440));
}

template <class S>
void gelu_erf(const float* x, float* y, int64_t n) {
    if constexpr (S::kWidth == 1) {
        for (int64_t i = 0; i < n; ++i) y[i] = gelu_erf_scalar<S>(x[i]);
    } else {
        map1<S>(x, y, n, [](typename S::V v) { return gelu_erf_v<S>(v); });
    }
}

// Value kinds of weighted_rows: 0 f32, 1 f16, 2 bf16.
template <class S, int kKind>
typename S::V load_row_values(const char* row, int64_t i, int64_t m) {
    if constexpr (kKind == 0) {
        const float* r = reinterpret_cast<const float*>(row) + i;
        return m == S::kWidth ? S::load(r) : S::load_partial(r, m, 0.0f);
    } else if constexpr (kKind == 1) {
        return S::load_f16_partial(reinterpret_cast<const uint16_t*>(row) + i, m);
    } else {
        return S::load_bf16_partial(reinterpret_cast<const uint16_t*>(row) + i, m);
    }
}

// Up to four vectors of y stay in registers while every row goes by, so the
// four FMA chains overlap and y is loaded and stored once.
template <class S, int kKind>
void weighted_rows(const float* p, const void* rows, size_t stride, int64_t count, float* y, int64_t n) {
    using V = typename S::V;
    const auto* base = static_cast<const char*>(rows);
    constexpr int64_t kGroup = 4 * S::kWidth;
    for (int64_t i0 = 0; i0 < n; i0 += kGroup) {
        V acc[4];
        int64_t width[4];
        int chunks = 0;
        for (int64_t i = i0; i < n && i < i0 + kGroup; i += S::kWidth, ++chunks) {
            width[chunks] = n - i < S::kWidth ? n - i : S::kWidth;
            acc[chunks] = width[chunks] == S::kWidth ? S::load(y + i) : S::load_partial(y + i, width[chunks], 0.0f);
        }
        for (int64_t j = 0; j < count; ++j) {
            const char* row = base + static_cast<size_t>(j) * stride;
            const V pj = S::set1(p[j]);
            for (int c = 0; c < chunks; ++c)
                acc[c] = S::fma(pj, load_row_values<S, kKind>(row, i0 + c * S::kWidth, width[c]), acc[c]);
        }
        for (int c = 0; c < chunks; ++c) {
            float* out = y + i0 + c * S::kWidth;
            if (width[c] == S::kWidth)
                S::store(out, acc[c]);
            else
                S::store_partial(out, acc[c], width[c]);
        }
    }
}

// Rows up to kMaxChunks vectors long keep the query in registers; longer
// ones stream it from memory per row like dot().
template <class S, int kKind>
void dot_rows(const float* q, const void* rows, size_t stride, int64_t count, float* out, int64_t n) {
    using V = typename S::V;
    constexpr int kMaxChunks = 8;
    const auto* base = static_cast<const char*>(rows);
    const int64_t chunks = (n + S::kWidth - 1) / S::kWidth;
    if (chunks > kMaxChunks) {
        for (int64_t j = 0; j < count; ++j) {
            const char* row = base + static_cast<size_t>(j) * stride;
            V acc = S::zero();
            for (int64_t i = 0; i < n; i += S::kWidth) {
                const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
                const V qv = m == S::kWidth ? S::load(q + i) : S::load_partial(q + i, m, 0.0f);
                acc = S::fma(qv, load_row_values<S, kKind>(row, i, m), acc);
            }
            out[j] = S::reduce_add(acc);
        }
        return;
    }
    V qv[kMaxChunks];
    int64_t width[kMaxChunks];
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t i = c * S::kWidth;
        width[c] = n - i < S::kWidth ? n - i : S::kWidth;
        qv[c] = width[c] == S::kWidth ? S::load(q + i) : S::load_partial(q + i, width[c], 0.0f);
    }
    for (int64_t j = 0; j < count; ++j) {
        const char* row = base + static_cast<size_t>(j) * stride;
        V acc0 = S::zero(), acc1 = S::zero();
        int64_t c = 0;
        for (; c + 1 < chunks; c += 2) {
            acc0 = S::fma(qv[c], load_row_values<S, kKind>(row, c * S::kWidth, width[c]), acc0);
            acc1 = S::fma(qv[c + 1], load_row_values<S, kKind>(row, (c + 1) * S::kWidth, width[c + 1]), acc1);
        }
        if (c < chunks) acc0 = S::fma(qv[c], load_row_values<S, kKind>(row, c * S::kWidth, width[c]), acc0);
        out[j] = S::reduce_add(S::add(acc0, acc1));
    }
}

template <class S, bool kBf16>
void half_to_f32(const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += S::kWidth) {
        const int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
        const typename S::V v = kBf16 ? S::load_bf16_partial(x + i, m) : S::load_f16_partial(x + i, m);
        if (m == S::kWidth) {
            S::store(y + i, v);
        } else {
            S::store_partial(y + i, v, m);
        }
    }
}

// See VecKernels::softmax_key_block. Lanes past n are loaded as -inf and
// never stored.
template <class S>
void softmax_key_block(float* s, int64_t ld, int64_t keys, int64_t n, float scale, const float* lo, const float* hi,
                       float* max, float* sum, float* factor) {
    using V = typename S::V;
    constexpr float kInf = std::numeric_limits<float>::infinity();
    const V minus_inf = S::set1(-kInf), lowest = S::set1(std::numeric_limits<float>::lowest());
    const V vscale = S::set1(scale), one = S::set1(1.0f), zero = S::zero();
    for (int64_t c = 0; c < n; c += S::kWidth) {
        const int64_t w = n - c < S::kWidth ? n - c : S::kWidth;
        const auto load = [&](const float* p) { return w == S::kWidth ? S::load(p) : S::load_partial(p, w, -kInf); };
        const auto store = [&](float* p, V v) {
            if (w == S::kWidth) {
                S::store(p, v);
            } else {
                S::store_partial(p, v, w);
            }
        };
        const V old_max = load(max + c);
        V block_max = minus_inf;
        if (lo != nullptr) {
            const V vlo = load(lo + c), vhi = load(hi + c);
            for (int64_t j = 0; j < keys; ++j) {
                const V key = S::set1(static_cast<float>(j));
                V x = S::mul(load(s + j * ld + c), vscale);
                x = S::select_lt(key, vlo, minus_inf, x);
                x = S::select_lt(vhi, key, minus_inf, x);
                store(s + j * ld + c, x);
                block_max = S::max(block_max, x);
            }
        } else if (scale != 1.0f) {
            for (int64_t j = 0; j < keys; ++j) {
                const V x = S::mul(load(s + j * ld + c), vscale);
                store(s + j * ld + c, x);
                block_max = S::max(block_max, x);
            }
        } else {
            // Scores already scaled (x 1 is exact): nothing to write back.
            for (int64_t j = 0; j < keys; ++j) block_max = S::max(block_max, load(s + j * ld + c));
        }
        const V new_max = S::max(old_max, block_max);
        const V shift = S::select_lt(new_max, lowest, zero, new_max);  // 0 while nothing is visible
        V block_sum = zero;
        for (int64_t j = 0; j < keys; ++j) {
            const V e = S::exp(S::sub(load(s + j * ld + c), shift));
            store(s + j * ld + c, e);
            block_sum = S::add(block_sum, e);
        }
        const V f = S::select_lt(old_max, new_max, S::exp(S::sub(old_max, shift)), one);
        store(factor + c, f);
        store(sum + c, S::add(S::mul(load(sum + c), f), block_sum));
        store(max + c, new_max);
    }
}

}  // namespace cria::ops::generic

namespace cria::ops::generic {

// The whole table for one traits type. constexpr, so the table is constant-
// initialised and no code runs at load time (the functions it points to may
// use instructions the machine lacks until best_isa() selects them).
template <class S>
constexpr VecKernels make_table() {
    return VecKernels{
        &dot<S>,          &dot_half<S, false>, &dot_half<S, true>,  &sum_squares<S>,   &sum<S>,
        &max<S>,          &scale<S>,           &scale_mul<S>,       &axpy<S>,          &axpy_half<S, false>,
        &axpy_half<S, true>, &add<S>,          &mul<S>,             &exp_shift_sum<S>, &silu<S>,
        &swiglu<S>,       &gelu<S>,            &geglu<S>,           &gelu_erf<S>,      &weighted_rows<S, 0>,
        &weighted_rows<S, 1>, &weighted_rows<S, 2>, &dot_rows<S, 0>,     &dot_rows<S, 1>,   &dot_rows<S, 2>,
        &half_to_f32<S, false>, &half_to_f32<S, true>, &softmax_key_block<S>,
    };
}

}  // namespace cria::ops::generic
