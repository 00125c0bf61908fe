// F32 -> F16 rows with AVX-512 (vcvtps2ph, 16 values per instruction), for
// the KV cache's F16 writes: the scalar conversion took ~4% of a 512-token
// prompt on Qwen3-0.6B (perf, 1 thread), on the thread that stores K and V
// while the others wait. The same bits as f32_to_f16 for every input:
// vcvtps2ph rounds to nearest even, as f32_to_f16 does for every non-NaN
// (subnormal halves and overflow to infinity included); a NaN becomes the
// quiet 0x7E00 with its sign, as f32_to_f16 makes it, instead of keeping
// its payload.

#include <cstdint>

#include "quant/codecs.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace cria::quant::detail {

bool f16_rows_avx512_usable() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

#pragma GCC push_options
#pragma GCC target("avx2,f16c,avx512f,avx512bw,avx512vl")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

inline __m256i to_f16(__m512 x) {
    const __m256i half = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    if (nan == 0) return half;
    const __m512i sign = _mm512_srli_epi32(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)), 16);
    const __m512i signed_nan = _mm512_or_si512(sign, _mm512_set1_epi32(0x7E00));
    return _mm256_mask_blend_epi16(nan, half, _mm512_cvtepi32_epi16(signed_nan));
}

}  // namespace

void quantize_f16_avx512(const float* src, void* dst, int64_t n) {
    auto* out = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), to_f16(_mm512_loadu_ps(src + i)));
    if (i < n) {
        const __mmask16 rest = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(out + i, rest, to_f16(_mm512_maskz_loadu_ps(rest, src + i)));
    }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace cria::quant::detail

#else  // not x86-64

namespace cria::quant::detail {
bool f16_rows_avx512_usable() { return false; }
void quantize_f16_avx512(const float*, void*, int64_t) {}
}  // namespace cria::quant::detail

#endif
