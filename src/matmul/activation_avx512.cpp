// Q8_0Planar activation quantisation with AVX-512: one block of 32 values in
// two registers instead of 32 scalar steps. Bit-identical to the scalar
// quantize_q8_planar (activation.cpp) for every input, NaN and infinity
// included, so a product's result does not depend on which one ran: the
// same max (NaN ignored, as std::max(amax, |x|) does), the same division
// for d and 1/d, the f16 rounding of d by vcvtps2ph (round to nearest even,
// which f32_to_f16 is for every non-NaN value; d is never NaN), the same
// round-half-away as round_half_away (truncate, then compare the exact
// remainder with +-0.5), and the int8 truncation of static_cast<int8_t>.
//
// Quantisation ran at about 8% of a 512-token prompt's time on a
// Llama-3.2-1B-shaped Q4_0 file and 10% on Qwen3-0.6B (perf, 1 thread)
// with the scalar code, which this build compiles for baseline x86-64.

#include <cstdint>

#include "matmul/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
// GCC 12's own AVX-512 intrinsics trip -Wmaybe-uninitialized (their
// pass-through operand is undefined by definition); silence that here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace cria::matmul::detail {

void quantize_q8_planar_avx512(const float* x, int64_t k, void* out) {
    const int64_t nb = k / 32;
    auto* base = static_cast<uint8_t*>(out);
    auto* scale = reinterpret_cast<float*>(base + q8_0_planar_scale_offset(k));
    auto* sums = reinterpret_cast<int32_t*>(base + q8_0_planar_sum_offset(k));
    const __m512 half = _mm512_set1_ps(0.5f), minus_half = _mm512_set1_ps(-0.5f);
    const __m512i one = _mm512_set1_epi32(1);
    for (int64_t b = 0; b < nb; ++b) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
        // max_ps returns its second operand when the first is NaN, so a NaN
        // value leaves the running maximum as it was.
        __m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps());
        m = _mm512_max_ps(_mm512_abs_ps(v1), m);
        const float amax = _mm512_reduce_max_ps(m);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const __m512 vid = _mm512_set1_ps(id);
        __m512i q[2];
        const __m512 v[2] = {v0, v1};
        for (int h = 0; h < 2; ++h) {
            const __m512 p = _mm512_mul_ps(v[h], vid);
            __m512i t = _mm512_cvttps_epi32(p);
            const __m512 rest = _mm512_sub_ps(p, _mm512_cvtepi32_ps(t));
            t = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(rest, half, _CMP_GE_OQ), t, one);
            t = _mm512_mask_sub_epi32(t, _mm512_cmp_ps_mask(rest, minus_half, _CMP_LE_OQ), t, one);
            // The int8 the scalar code keeps (truncation), widened back for the sum.
            const __m128i bytes = _mm512_cvtepi32_epi8(t);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 32 * b + 16 * h), bytes);
            q[h] = _mm512_cvtepi8_epi32(bytes);
        }
        const __m128i dh = _mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT);
        scale[b] = _mm_cvtss_f32(_mm_cvtph_ps(dh));
        sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q[0], q[1]));
    }
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
void quantize_q8_planar_avx512(const float*, int64_t, void*) {}
}  // namespace cria::matmul::detail

#endif
