// small_gemm for AVX-512: tiles of 8 rows x 32 columns of C in 16 registers;
// per step of k, two loads of B's row and eight broadcasts of A feed sixteen
// FMAs (enough independent sums to cover the FMA latency on both pipes, and
// fewer loads than FMAs). Whole 32-column tiles run without masks; the
// columns past the last whole 32 go through masked loads and stores (in one
// vector when they are 16 or fewer), and the rows past the last whole 8
// through tiles of 4 and 1. The loops over a
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

// Rows [i0, i0 + kR) and columns [j0, j0 + 16 kV) (fewer when kMasked).
template <int kR, int kV, bool kMasked>
void tile(const SmallGemm& g, int64_t i0, int64_t j0) {
    const int64_t cols = kMasked ? std::min<int64_t>(16 * kV, g.n - j0) : 16 * kV;
    const __mmask16 mask[2] = {tail_mask(cols), tail_mask(cols - 16)};
    const int64_t rs = a_row_step(g), cs = a_col_step(g);
    const float* a = g.a + i0 * rs;
    const __m512 c_scale = _mm512_set1_ps(g.c_scale);
    // C's scale per column: c_scale, times c_col_scale's values when set.
    __m512 scale[kV];
    #pragma GCC unroll 2
    for (int v = 0; v < kV; ++v)
        scale[v] = !g.accumulate || !g.c_col_scale ? c_scale
                   : _mm512_mul_ps(c_scale, kMasked ? _mm512_maskz_loadu_ps(mask[v], g.c_col_scale + j0 + 16 * v)
                                                    : _mm512_loadu_ps(g.c_col_scale + j0 + 16 * v));
    __m512 acc[kR][kV];
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
        const float* c = g.c + (i0 + r) * g.ldc + j0;
        #pragma GCC unroll 2
        for (int v = 0; v < kV; ++v) {
            if (!g.accumulate)
                acc[r][v] = _mm512_setzero_ps();
            else
                acc[r][v] = _mm512_mul_ps(scale[v], kMasked ? _mm512_maskz_loadu_ps(mask[v], c + 16 * v)
                                                           : _mm512_loadu_ps(c + 16 * v));
            if (g.accumulate && g.c_row_scale) acc[r][v] = _mm512_mul_ps(acc[r][v], _mm512_set1_ps(g.c_row_scale[i0 + r]));
        }
    }
    for (int64_t p = 0; p < g.k; ++p) {
        const float* b = g.b + p * g.ldb + j0;
        __m512 bv[kV];
        #pragma GCC unroll 2
        for (int v = 0; v < kV; ++v)
            bv[v] = kMasked ? _mm512_maskz_loadu_ps(mask[v], b + 16 * v) : _mm512_loadu_ps(b + 16 * v);
        const float* ap = a + p * cs;
        #pragma GCC unroll 8
        for (int r = 0; r < kR; ++r) {
            const __m512 x = _mm512_set1_ps(ap[r * rs]);
            #pragma GCC unroll 2
            for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
        float* c = g.c + (i0 + r) * g.ldc + j0;
        #pragma GCC unroll 2
        for (int v = 0; v < kV; ++v) {
            if (kMasked)
                _mm512_mask_storeu_ps(c + 16 * v, mask[v], acc[r][v]);
            else
                _mm512_storeu_ps(c + 16 * v, acc[r][v]);
        }
    }
}

// Columns [j0, j0 + 16 kV): tiles of 8 rows, then 4, then 1.
template <int kV, bool kMasked>
void column_block(const SmallGemm& g, int64_t j0) {
    int64_t i0 = 0;
    for (; i0 + kRows <= g.m; i0 += kRows) tile<kRows, kV, kMasked>(g, i0, j0);
    for (; i0 + 4 <= g.m; i0 += 4) tile<4, kV, kMasked>(g, i0, j0);
    for (; i0 < g.m; ++i0) tile<1, kV, kMasked>(g, i0, j0);
}

}  // namespace

void small_gemm_avx512(const SmallGemm& g) {
    int64_t j0 = 0;
    for (; j0 + kCols <= g.n; j0 += kCols) column_block<2, false>(g, j0);
    // The last columns: 16 or fewer in one vector (no FMAs on masked-off
    // lanes of a second one: the delta rules' 16-token chunks), else two.
    if (j0 == g.n) return;
    if (g.n - j0 == 16) {
        column_block<1, false>(g, j0);
    } else if (g.n - j0 < 16) {
        column_block<1, true>(g, j0);
    } else {
        column_block<2, true>(g, j0);
    }
}

}  // namespace cria::ops
#endif
