// small_gemm for AVX-512: tiles of 4 rows x 32 columns of C in 8 registers;
// per step of k, two loads of B's row and four broadcasts of A feed eight
// FMAs. Columns past the last whole 16 go through masked loads and stores.

#if defined(__x86_64__)
// The vector types only travel between functions of this file.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <algorithm>

#include "ops/small_gemm.h"

#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")

namespace cria::ops {
namespace {

constexpr int kRows = 4;

inline __mmask16 tail_mask(int64_t cols) { return cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1); }

// Rows [i0, i0 + rows) and columns [j0, j0 + 32) (or fewer), rows <= kRows.
template <int kR>
void tile(const SmallGemm& g, int64_t i0, int64_t j0) {
    const int64_t cols = std::min<int64_t>(32, g.n - j0);
    const __mmask16 m0 = tail_mask(cols), m1 = tail_mask(std::max<int64_t>(0, cols - 16));
    __m512 acc[kR][2];
    for (int r = 0; r < kR; ++r) {
        const float* c = g.c + (i0 + r) * g.ldc + j0;
        acc[r][0] = g.accumulate ? _mm512_maskz_loadu_ps(m0, c) : _mm512_setzero_ps();
        acc[r][1] = g.accumulate && m1 ? _mm512_maskz_loadu_ps(m1, c + 16) : _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < g.k; ++p) {
        const float* b = g.b + p * g.ldb + j0;
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, b);
        const __m512 b1 = m1 ? _mm512_maskz_loadu_ps(m1, b + 16) : _mm512_setzero_ps();
        for (int r = 0; r < kR; ++r) {
            const __m512 a = _mm512_set1_ps(g.a[(i0 + r) * g.lda + p]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < kR; ++r) {
        float* c = g.c + (i0 + r) * g.ldc + j0;
        _mm512_mask_storeu_ps(c, m0, acc[r][0]);
        if (m1) _mm512_mask_storeu_ps(c + 16, m1, acc[r][1]);
    }
}

}  // namespace

void small_gemm_avx512(const SmallGemm& g) {
    for (int64_t j0 = 0; j0 < g.n; j0 += 32) {
        int64_t i0 = 0;
        for (; i0 + kRows <= g.m; i0 += kRows) tile<kRows>(g, i0, j0);
        for (; i0 < g.m; ++i0) tile<1>(g, i0, j0);
    }
}

}  // namespace cria::ops
#endif
