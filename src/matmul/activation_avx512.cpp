// AVX-512 forms of the two activation quantisers the packed products spend
// measurable time in: Q8_K (the K-quants) and Q8_0Planar (the packed 32-value
// types). A 512-token product on one core spent about a tenth of its time in
// the scalar ones (Q8_K: 1.0 ms of ~9.5 at k = 2048, 4.1 of ~36 at 8192).
// Each value goes through the same float operations, in the same order, as
// in activation.cpp (a multiply, then the rounding), and the block maxima
// are the same values, so the bytes written equal the scalar reference's;
// tests/matmul/activation_test.cpp checks them bit for bit.

#include <cstdint>
#include <cstring>

#include "cria/core/float16.h"
#include "cria/quant/blocks.h"
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
namespace {

using cria::quant::block_q8_K;
using cria::quant::QK_K;

// |v| with NaN lanes as 0: _mm512_max_ps(a, b) gives b when a is NaN, so a
// running max that takes |x| first skips NaNs, as the scalar `>`/std::max do.
inline __m512 running_abs_max(__m512 v, __m512 m) {
    return _mm512_max_ps(_mm512_andnot_ps(_mm512_set1_ps(-0.0f), v), m);
}

// A rounded product, kept from being fused with the next operation: with FMA
// enabled the compiler contracts a multiply and an add into one vfmadd, which
// rounds once, so a product that rounds to exactly k + 0.5 (a rounding tie
// in the scalar code) would round the other way.
inline __m512 rounded(__m512 product) {
    asm("" : "+v"(product));
    return product;
}

// ggml's nearest_int (ties to even through the 1.5 * 2^23 shift), 16 lanes.
inline __m512i nearest_int16(__m512 v) {
    const __m512i bits = _mm512_castps_si512(_mm512_add_ps(v, _mm512_set1_ps(12582912.0f)));
    return _mm512_sub_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x007fffff)), _mm512_set1_epi32(0x00400000));
}

void quantize_q8_K_avx512(const float* x, int64_t k, void* out) {
    auto* y = static_cast<block_q8_K*>(out);
    for (int64_t b = 0; b < k / QK_K; ++b, x += QK_K) {
        __m512 v[16];
        __m512 m = _mm512_setzero_ps();
        for (int i = 0; i < 16; ++i) {
            v[i] = _mm512_loadu_ps(x + 16 * i);
            m = running_abs_max(v[i], m);
        }
        const float amax = _mm512_reduce_max_ps(m);
        if (amax == 0.0f) {
            y[b].d = 0.0f;
            std::memset(y[b].qs, 0, sizeof y[b].qs);
            std::memset(y[b].bsums, 0, sizeof y[b].bsums);
            continue;
        }
        // The signed value of the first element of largest magnitude.
        float max = 0.0f;
        for (int i = 0; i < 16; ++i) {
            const __mmask16 at = _mm512_cmp_ps_mask(_mm512_andnot_ps(_mm512_set1_ps(-0.0f), v[i]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
            if (at) {
                max = x[16 * i + __builtin_ctz(at)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 s = _mm512_set1_ps(iscale);
        for (int i = 0; i < 16; ++i) {
            const __m512i q = _mm512_min_epi32(nearest_int16(rounded(_mm512_mul_ps(s, v[i]))), _mm512_set1_epi32(127));
            const __m128i q8 = _mm512_cvtepi32_epi8(q);  // wraps as static_cast<int8_t> does
            _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16 * i), q8);
            y[b].bsums[i] = static_cast<int16_t>(_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q8)));
        }
        y[b].d = 1.0f / iscale;
    }
}

// roundf of 16 lanes as activation.cpp's round_half_away: truncate, then
// step by one where the exact remainder reaches +-0.5.
inline __m512i round_half_away16(__m512 v) {
    const __m512i t = _mm512_cvttps_epi32(v);
    const __m512 rest = _mm512_sub_ps(v, _mm512_cvtepi32_ps(t));
    const __mmask16 up = _mm512_cmp_ps_mask(rest, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __mmask16 down = _mm512_cmp_ps_mask(rest, _mm512_set1_ps(-0.5f), _CMP_LE_OQ);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i stepped_up = _mm512_mask_add_epi32(t, up, t, one);
    return _mm512_mask_sub_epi32(stepped_up, down, stepped_up, one);
}

void quantize_q8_0_planar_avx512(const float* x, int64_t k, void* out) {
    auto* base = static_cast<uint8_t*>(out);
    auto* scale = reinterpret_cast<float*>(base + q8_0_planar_scale_offset(k));
    auto* sums = reinterpret_cast<int32_t*>(base + q8_0_planar_sum_offset(k));
    for (int64_t b = 0; b < k / 32; ++b) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
        const float amax = _mm512_reduce_max_ps(running_abs_max(v1, running_abs_max(v0, _mm512_setzero_ps())));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const __m512 s = _mm512_set1_ps(id);
        const __m128i q0 = _mm512_cvtepi32_epi8(round_half_away16(rounded(_mm512_mul_ps(v0, s))));
        const __m128i q1 = _mm512_cvtepi32_epi8(round_half_away16(rounded(_mm512_mul_ps(v1, s))));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 32 * b), q0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 32 * b + 16), q1);
        scale[b] = f16_to_f32(f32_to_f16(d));
        sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(q0), _mm512_cvtepi8_epi32(q1)));
    }
}

}  // namespace

bool prepare_activation_row_avx512(ActivationFormat format, const float* x, int64_t k, void* out) {
    switch (format) {
        case ActivationFormat::Q8_K: quantize_q8_K_avx512(x, k, out); return true;
        case ActivationFormat::Q8_0Planar: quantize_q8_0_planar_avx512(x, k, out); return true;
        default: return false;
    }
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
bool prepare_activation_row_avx512(ActivationFormat, const float*, int64_t, void*) { return false; }
}  // namespace cria::matmul::detail

#endif
