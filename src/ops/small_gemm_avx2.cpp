// small_gemm for AVX2 + FMA: tiles of 4 rows x 16 columns of C in 8
// registers; per step of k, two loads of B's row and four broadcasts of A
// feed eight FMAs. Columns past the last whole 8 go through masked loads
// and stores. The loops over a tile's rows are unrolled so that its sums
// stay in registers (GCC at -O2 otherwise keeps them in memory).

#if defined(__x86_64__)
// The vector types only travel between functions of this file.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <algorithm>

#include "ops/small_gemm.h"

#pragma GCC target("avx2,fma")

namespace cria::ops {
namespace {

constexpr int kRows = 4;

inline __m256i tail_mask(int64_t cols) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(cols, 0, 8))), lanes);
}

template <int kR>
void tile(const SmallGemm& g, int64_t i0, int64_t j0) {
    const int64_t cols = std::min<int64_t>(16, g.n - j0);
    const __m256i m0 = tail_mask(cols), m1 = tail_mask(cols - 8);
    const bool second = cols > 8;
    const int64_t rs = a_row_step(g), cs = a_col_step(g);
    const __m256 c_scale = _mm256_set1_ps(g.c_scale);
    // C's scale per column: c_scale, times c_col_scale's values when set.
    __m256 scale0 = c_scale, scale1 = c_scale;
    if (g.accumulate && g.c_col_scale) {
        scale0 = _mm256_mul_ps(c_scale, _mm256_maskload_ps(g.c_col_scale + j0, m0));
        if (second) scale1 = _mm256_mul_ps(c_scale, _mm256_maskload_ps(g.c_col_scale + j0 + 8, m1));
    }
    __m256 acc[kR][2];
    #pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
        const float* c = g.c + (i0 + r) * g.ldc + j0;
        acc[r][0] = g.accumulate ? _mm256_mul_ps(scale0, _mm256_maskload_ps(c, m0)) : _mm256_setzero_ps();
        acc[r][1] = g.accumulate && second ? _mm256_mul_ps(scale1, _mm256_maskload_ps(c + 8, m1)) : _mm256_setzero_ps();
        if (g.accumulate && g.c_row_scale) {
            const __m256 row = _mm256_set1_ps(g.c_row_scale[i0 + r]);
            acc[r][0] = _mm256_mul_ps(acc[r][0], row);
            acc[r][1] = _mm256_mul_ps(acc[r][1], row);
        }
    }
    for (int64_t p = 0; p < g.k; ++p) {
        const float* b = g.b + p * g.ldb + j0;
        const __m256 b0 = _mm256_maskload_ps(b, m0);
        const __m256 b1 = second ? _mm256_maskload_ps(b + 8, m1) : _mm256_setzero_ps();
        #pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
            const __m256 a = _mm256_set1_ps(g.a[(i0 + r) * rs + p * cs]);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
        float* c = g.c + (i0 + r) * g.ldc + j0;
        _mm256_maskstore_ps(c, m0, acc[r][0]);
        if (second) _mm256_maskstore_ps(c + 8, m1, acc[r][1]);
    }
}

}  // namespace

void small_gemm_avx2(const SmallGemm& g) {
    for (int64_t j0 = 0; j0 < g.n; j0 += 16) {
        int64_t i0 = 0;
        for (; i0 + kRows <= g.m; i0 += kRows) tile<kRows>(g, i0, j0);
        for (; i0 < g.m; ++i0) tile<1>(g, i0, j0);
    }
}

}  // namespace cria::ops
#endif
