// transpose for AVX2: 8 x 8 blocks, eight row loads, three rounds of
// shuffles (pairs of values, quads, halves) and eight row stores; the
// rows and columns past the last whole 8 go value by value.

#if defined(__x86_64__)
// The vector types only travel between functions of this file.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include "ops/transpose.h"

#pragma GCC target("avx2,fma")

namespace cria::ops {
namespace {

// dst rows [r0, r0 + 8), columns [c0, c0 + 8) from src rows [c0, c0 + 8), columns [r0, r0 + 8).
void block8(const Transpose& t, int64_t r0, int64_t c0) {
    __m256 r[8], u[8], v[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(t.src + (c0 + i) * t.ld_src + r0);
    for (int i = 0; i < 8; i += 2) {
        u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        v[i] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        v[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        v[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        v[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(t.dst + (r0 + i) * t.ld_dst + c0, _mm256_permute2f128_ps(v[i], v[i + 4], 0x20));
        _mm256_storeu_ps(t.dst + (r0 + i + 4) * t.ld_dst + c0, _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
    }
}

}  // namespace

void transpose_avx2(const Transpose& t) {
    const int64_t rows8 = t.rows / 8 * 8, cols8 = t.cols / 8 * 8;
    for (int64_t r0 = 0; r0 < rows8; r0 += 8)
        for (int64_t c0 = 0; c0 < cols8; c0 += 8) block8(t, r0, c0);
    for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = r < rows8 ? cols8 : 0; c < t.cols; ++c) t.dst[r * t.ld_dst + c] = t.src[c * t.ld_src + r];
}

}  // namespace cria::ops
#endif
