#pragma once
// Generic bodies of the row primitives (see vec.h), written once over a
// vector-traits type S that provides:
//   S::kWidth, S::V, zero(), set1(f), load(p), store(p, v),
//   load_partial(p, n, fill) / store_partial(p, v, n) for tails,
//   load_f16(p) / load_bf16(p) (+ _partial), add, sub, mul, fma(a, b, c) = a*b+c,
//   max, div, reduce_add(v), reduce_max(v), exp(v).
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
        &swiglu<S>,       &gelu<S>,            &geglu<S>,           &half_to_f32<S, false>, &half_to_f32<S, true>,
    };
}

}  // namespace cria::ops::generic
