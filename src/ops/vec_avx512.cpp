// Row primitives for AVX-512 (F + BW + VL + DQ): the generic bodies with
// 16-lane vectors, tails through masked loads and stores. Everything after the
// target pragma is compiled for AVX-512; only the accessor above it runs
// before the ISA check.

// The vector types only travel between functions of this file (-Wpsabi is
// about calls from code compiled without the target).
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 reports its own _mm512_undefined_* helpers as uninitialised.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/vec.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace cria::ops {
namespace avx512_impl {
extern const VecKernels kTable;
}
const VecKernels* vec_kernels_avx512() { return &avx512_impl::kTable; }
}  // namespace cria::ops

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

#include "ops/vec_generic.h"

namespace cria::ops::avx512_impl {
namespace {

struct Avx512Traits {
    static constexpr int64_t kWidth = 16;
    using V = __m512;
    static __mmask16 mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float f) { return _mm512_set1_ps(f); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V load_partial(const float* p, int64_t n, float fill) {
        return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask(n), p);
    }
    static void store_partial(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, mask(n), v); }
    static V load_f16_partial(const uint16_t* p, int64_t n) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p));
    }
    static V load_bf16_partial(const uint16_t* p, int64_t n) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask(n), p)), 16));
    }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V min(V a, V b) { return _mm512_min_ps(a, b); }
    static V abs(V v) { return _mm512_abs_ps(v); }
    static V select_lt(V a, V b, V t, V f) { return _mm512_mask_mov_ps(f, _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), t); }
    static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
    static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
    // Same algorithm and accuracy as the AVX2 exp (vec_avx2.cpp).
    static V exp(V x) {
        const V hi = _mm512_set1_ps(88.3762626647949f);
        const V lo = _mm512_set1_ps(-87.3365447505531f);
        const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
        const __mmask16 overflow = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
        const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        const V xc = _mm512_max_ps(_mm512_min_ps(x, hi), lo);
        const V k = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), xc);
        r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
        V p = _mm512_set1_ps(1.9875691500e-4f);
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
        p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
        V result = _mm512_scalef_ps(p, k);  // p * 2^k, exact
        result = _mm512_mask_mov_ps(result, underflow, _mm512_setzero_ps());
        result = _mm512_mask_mov_ps(result, overflow, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
        return _mm512_mask_mov_ps(result, nan, x);
    }
};

}  // namespace

constinit const VecKernels kTable = generic::make_table<Avx512Traits>();

}  // namespace cria::ops::avx512_impl

#else
namespace cria::ops {
const VecKernels* vec_kernels_avx512() { return nullptr; }
}  // namespace cria::ops
#endif
