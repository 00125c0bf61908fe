// small_gemm for AVX-512: tiles of 8 rows x 32 columns of C in 16 registers;
// per step of k, two loads of B's row and eight broadcasts of A feed sixteen
// FMAs (enough independent sums to cover the FMA latency on both pipes, and
// fewer loads than FMAs). Whole 32-column tiles run without masks; the
// columns past the last whole 32 go through masked loads and stores, and the
// rows past the last whole 8 through tiles of 4 and 1. The loops over a
// tile's rows are unrolled so that its sums stay in registers (GCC at -O2
// otherwise keeps them in memory, at a third of the speed).

#if defined(__x86_64__)
// The vector types only travel between functions of this file.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <algorithm>

#include "ops/small_gemm.h"

#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")

namespace cria::ops {
namespace {

constexpr int kRows = 8;
constexpr int64_t kCols = 32;

inline __mmask16 tail_mask(int64_t cols) {
    return cols >= 16 ? __mmask16(0xFFFF) : cols <= 0 ? __mmask16(0) : __mmask16((1u << cols) - 1);
}

// Rows [i0, i0 + kR) and columns [j0, j0 + 32) (fewer when kMasked).
template <int kR, bool kMasked>
void tile(const SmallGemm& g, int64_t i0, int64_t j0) {
    const int64_t cols = kMasked ? std::min<int64_t>(kCols, g.n - j0) : kCols;
    const __mmask16 m0 = tail_mask(cols), m1 = tail_mask(cols - 16);
    const int64_t rs = a_row_step(g), cs = a_col_step(g);
    const float* a = g.a + i0 * rs;
    const __m512 c_scale = _mm512_set1_ps(g.c_scale);
    __m512 acc[kR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
        const float* c = g.c + (i0 + r) * g.ldc + j0;
        if (!g.accumulate) {
            acc[r][0] = acc[r][1] = _mm512_setzero_ps();
        } else if (kMasked) {
            acc[r][0] = _mm512_mul_ps(c_scale, _mm512_maskz_loadu_ps(m0, c));
            acc[r][1] = _mm512_mul_ps(c_scale, _mm512_maskz_loadu_ps(m1, c + 16));
        } else {
            acc[r][0] = _mm512_mul_ps(c_scale, _mm512_loadu_ps(c));
            acc[r][1] = _mm512_mul_ps(c_scale, _mm512_loadu_ps(c + 16));
        }
    }
    for (int64_t p = 0; p < g.k; ++p) {
        const float* b = g.b + p * g.ldb + j0;
        const __m512 b0 = kMasked ? _mm512_maskz_loadu_ps(m0, b) : _mm512_loadu_ps(b);
        const __m512 b1 = kMasked ? _mm512_maskz_loadu_ps(m1, b + 16) : _mm512_loadu_ps(b + 16);
        const float* ap = a + p * cs;
        #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
            const __m512 x = _mm512_set1_ps(ap[r * rs]);
            acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
        float* c = g.c + (i0 + r) * g.ldc + j0;
        if (kMasked) {
            _mm512_mask_storeu_ps(c, m0, acc[r][0]);
            _mm512_mask_storeu_ps(c + 16, m1, acc[r][1]);
        } else {
            _mm512_storeu_ps(c, acc[r][0]);
            _mm512_storeu_ps(c + 16, acc[r][1]);
        }
    }
}

template <bool kMasked>
void column_block(const SmallGemm& g, int64_t j0) {
    int64_t i0 = 0;
    for (; i0 + kRows <= g.m; i0 += kRows) tile<kRows, kMasked>(g, i0, j0);
    for (; i0 + 4 <= g.m; i0 += 4) tile<4, kMasked>(g, i0, j0);
    for (; i0 < g.m; ++i0) tile<1, kMasked>(g, i0, j0);
}

}  // namespace

void small_gemm_avx512(const SmallGemm& g) {
    int64_t j0 = 0;
    for (; j0 + kCols <= g.n; j0 += kCols) column_block<false>(g, j0);
    if (j0 < g.n) column_block<true>(g, j0);
}

}  // namespace cria::ops
#endif
