// small_gemm for AVX-512: tiles of up to 6 rows x 64 columns of C in 24
// registers; per step of k, four loads of B's row and six broadcasts of A
// feed 24 FMAs (enough independent sums to keep both FMA pipes busy, and
// fewer loads per FMA than narrower tiles). Narrow products (32 columns or
// fewer left) use 32-column tiles. Columns past the last whole 16 go through
// masked loads and stores. Every element of C is the same chain of FMAs over
// k whatever tile computed it, so the tile shapes never change a result.
// The small loops over rows and vectors carry `#pragma GCC unroll`: unrolled
// only late, the sums stay an array in memory (a store per FMA).

#if defined(__x86_64__)
// The vector types only travel between functions of this file.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <algorithm>

#include "ops/small_gemm.h"

#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")

namespace cria::ops {
namespace {

constexpr int kRows = 6;

inline __mmask16 tail_mask(int64_t cols) {
    return cols >= 16 ? __mmask16(0xFFFF) : cols <= 0 ? __mmask16(0) : __mmask16((1u << cols) - 1);
}

// Rows [i0, i0 + kR) and columns [j0, j0 + 16 kV) (or fewer).
template <int kR, int kV>
void tile(const SmallGemm& g, int64_t i0, int64_t j0) {
    const int64_t cols = g.n - j0;
    __mmask16 masks[kV];
    #pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) masks[v] = tail_mask(cols - 16 * v);
    __m512 acc[kR][kV];
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
        const float* c = g.c + (i0 + r) * g.ldc + j0;
        #pragma GCC unroll 8
        for (int v = 0; v < kV; ++v)
            acc[r][v] = g.accumulate ? _mm512_maskz_loadu_ps(masks[v], c + 16 * v) : _mm512_setzero_ps();
    }
    // Locals, not g's fields: the compiler must see that nothing in the loop
    // can change them, or it reloads them and keeps the sums in memory.
    const float* a_rows = g.a + i0 * g.lda;
    const float* b_row = g.b + j0;
    const int64_t lda = g.lda, ldb = g.ldb, k = g.k;
    for (int64_t p = 0; p < k; ++p, b_row += ldb) {
        __m512 bv[kV];
        #pragma GCC unroll 8
        for (int v = 0; v < kV; ++v) bv[v] = _mm512_maskz_loadu_ps(masks[v], b_row + 16 * v);
        #pragma GCC unroll 8
        for (int r = 0; r < kR; ++r) {
            const __m512 a = _mm512_set1_ps(a_rows[r * lda + p]);
            #pragma GCC unroll 8
            for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_fmadd_ps(a, bv[v], acc[r][v]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
        float* c = g.c + (i0 + r) * g.ldc + j0;
        #pragma GCC unroll 8
        for (int v = 0; v < kV; ++v) _mm512_mask_storeu_ps(c + 16 * v, masks[v], acc[r][v]);
    }
}

// Every row tile of one column strip kV vectors wide.
template <int kV>
void strip(const SmallGemm& g, int64_t j0) {
    int64_t i0 = 0;
    for (; i0 + kRows <= g.m; i0 += kRows) tile<kRows, kV>(g, i0, j0);
    switch (g.m - i0) {
        case 5: return tile<5, kV>(g, i0, j0);
        case 4: return tile<4, kV>(g, i0, j0);
        case 3: return tile<3, kV>(g, i0, j0);
        case 2: return tile<2, kV>(g, i0, j0);
        case 1: return tile<1, kV>(g, i0, j0);
        default: return;
    }
}

}  // namespace

void small_gemm_avx512(const SmallGemm& g) {
    int64_t j0 = 0;
    for (; g.n - j0 > 32; j0 += 64) strip<4>(g, j0);
    if (j0 < g.n) strip<2>(g, j0);
}

}  // namespace cria::ops
#endif
