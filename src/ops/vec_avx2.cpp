// Row primitives for AVX2 + FMA + F16C: the generic bodies with 8-lane vectors.
// Everything after the target pragma is compiled for AVX2; only the accessor
// above it runs before the ISA check.

// The vector types only travel between functions of this file (-Wpsabi is
// about calls from code compiled without the target).
#pragma GCC diagnostic ignored "-Wpsabi"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/vec.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace cria::ops {
namespace avx2_impl {
extern const VecKernels kTable;
}
const VecKernels* vec_kernels_avx2() { return &avx2_impl::kTable; }
}  // namespace cria::ops

#pragma GCC target("avx2,fma,f16c")

#include "ops/vec_generic.h"

namespace cria::ops::avx2_impl {
namespace {

struct Avx2Traits {
    static constexpr int64_t kWidth = 8;
    using V = __m256;
    static V zero() { return _mm256_setzero_ps(); }
    static V set1(float f) { return _mm256_set1_ps(f); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    // Tails go through a small stack buffer: simple and never reads past n.
    static V load_partial(const float* p, int64_t n, float fill) {
        alignas(32) float buf[8];
        for (int i = 0; i < 8; ++i) buf[i] = fill;
        std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
        return _mm256_load_ps(buf);
    }
    static void store_partial(float* p, V v, int64_t n) {
        alignas(32) float buf[8];
        _mm256_store_ps(buf, v);
        std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
    }
    static __m128i load_u16_partial(const uint16_t* p, int64_t n) {
        if (n == 8) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        alignas(16) uint16_t buf[8] = {};
        std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(uint16_t));
        return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
    }
    static V load_f16_partial(const uint16_t* p, int64_t n) { return _mm256_cvtph_ps(load_u16_partial(p, n)); }
    static V load_bf16_partial(const uint16_t* p, int64_t n) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_u16_partial(p, n)), 16));
    }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V min(V a, V b) { return _mm256_min_ps(a, b); }
    static V abs(V v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
    static V select_lt(V a, V b, V t, V f) { return _mm256_blendv_ps(f, t, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
    static float reduce_add(V v) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static float reduce_max(V v) {
        __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        s = _mm_max_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    // exp(x) = 2^k * e^r with k = round(x / ln2), |r| <= ln2 / 2, and a
    // degree-6 polynomial for e^r (Cephes coefficients): about 2 ulp.
    // Inputs below -87.3 (including -inf) give exactly 0; above 88.7, +inf.
    static V exp(V x) {
        const V hi = _mm256_set1_ps(88.3762626647949f);
        const V lo = _mm256_set1_ps(-87.3365447505531f);
        const V underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
        const V overflow = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
        const V xc = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
        const V k = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), xc);
        r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
        V p = _mm256_set1_ps(1.9875691500e-4f);
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
        p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
        // 2^k, split in two factors so k = 128 (x near 88.7) does not overflow the exponent field.
        const __m256i ki = _mm256_cvtps_epi32(k);
        const __m256i half = _mm256_srai_epi32(ki, 1);
        const V pow_a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
        const V pow_b = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ki, half), _mm256_set1_epi32(127)), 23));
        V result = _mm256_mul_ps(_mm256_mul_ps(p, pow_a), pow_b);
        result = _mm256_andnot_ps(underflow, result);
        result = _mm256_blendv_ps(result, _mm256_set1_ps(std::numeric_limits<float>::infinity()), overflow);
        // NaN in, NaN out.
        return _mm256_blendv_ps(result, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
};

}  // namespace

constinit const VecKernels kTable = generic::make_table<Avx2Traits>();

}  // namespace cria::ops::avx2_impl

#else
namespace cria::ops {
const VecKernels* vec_kernels_avx2() { return nullptr; }
}  // namespace cria::ops
#endif
