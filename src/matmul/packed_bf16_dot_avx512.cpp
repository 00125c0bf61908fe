// BF16 weights (Rows16: per k, the 16 rows' values) times activations rounded
// to bf16, with AVX512-BF16's vdpbf16ps: each 32-bit lane adds two products
// (values 2j and 2j + 1 of its row) per instruction, twice the multiply-adds
// of an f32 FMA, and the bf16 products are exact in f32. This is ggml's math
// for BF16 weights (its vec_dot_type for BF16 is BF16), so the results stay
// as close to llama.cpp's as the f32-activation kernels are, or closer.
//
// One 64-byte load holds the 16 rows' values of k = 2j and 2j + 1; one
// vpermw interleaves them into the 16 lanes' pairs. A tile is up to three
// groups (48 rows) by up to 8 columns: 24 independent accumulators, twice
// what covers the instruction's latency on both of its pipes, and each
// activation pair, broadcast once, feeds every group. Every row is computed
// with the same operations whichever tile holds it (a tile of fewer groups
// or columns runs the same loop), so results do not depend on the thread
// count or the batch.

#include <cstdint>

#include "matmul/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace cria::matmul::detail {
namespace {

constexpr int kGroupRows = 16;
// The register tile: 3 groups (48 rows) x 8 columns, 24 accumulators and
// 3 weight registers + 8 broadcasts per 24 vdpbf16ps. CPU time of one thread,
// BF16 2048x2048 x 512 (bench_matmul_mat, Zen 5 class, loaded, best of 3-4
// runs, rounds interleaved): 2 x 6 (the former tile) 11.9-13.2 ms, 2 x 8
// 11.8-11.9, 3 x 6 11.1-11.4, 3 x 7 10.7-11.5, 3 x 8 10.4-11.4 (~400 GFLOP/s),
// 3 x 9 11.0-11.2, 4 x 6 10.5-11.7 (2 x 10 and 2 x 12 took ~30 ms, with the
// loops below only partly unrolled by their unroll 8: not a fair figure);
// 8192x2048: 2 x 6 50.5-51.4 ms, 3 x 8
// 41.4-46.4. Dropping the vpermw (wrong results, to see its cost) changed
// nothing measurable: the loads and the vdpbf16ps pipes bound the loop.
constexpr int kMaxGroups = 3;
constexpr int kMaxCols = 8;
constexpr size_t kPrefetchDistance = 2048;

// Lane r of the result: row r's values k = 2j (low half) and 2j + 1.
inline __m512i interleave_pairs(__m512i two_slices) {
    const __m512i index = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,  //
                                           23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(index, two_slices);
}

template <int G, int C>
void bf16_dot_run(const Tile& t) {
    const int64_t pairs = t.k / 2;
    const uint8_t* w[G];
    for (int g = 0; g < G; ++g) w[g] = t.w + static_cast<size_t>(g) * t.w_stride;
    const int32_t* x[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const int32_t*>(t.a + static_cast<size_t>(c) * t.a_stride);
    __m512 acc[G][C];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
    const auto step = [&](int64_t j, const __m512i (&wv)[G]) {
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const __m512bh xv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(x[c][j]));
#pragma GCC unroll 8
            for (int g = 0; g < G; ++g) acc[g][c] = _mm512_dpbf16_ps(acc[g][c], reinterpret_cast<__m512bh>(wv[g]), xv);
        }
    };
    int64_t j = 0;
    for (; j < pairs; ++j) {
        __m512i wv[G];
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) {
            const uint8_t* p = w[g] + static_cast<size_t>(j) * 64;
            _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchDistance), _MM_HINT_T0);
            wv[g] = interleave_pairs(_mm512_loadu_si512(p));
        }
        step(j, wv);
    }
    if (t.k % 2) {  // the last value alone: its partner is 0 (the activation's padding and a zeroed weight)
        __m512i wv[G];
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g)
            wv[g] = interleave_pairs(_mm512_maskz_loadu_epi16(0xFFFF, w[g] + static_cast<size_t>(j) * 64));
        step(j, wv);
    }
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
        const int rows = t.n_rows - g * kGroupRows;
        const __mmask16 mask = static_cast<__mmask16>(rows >= kGroupRows ? 0xFFFF : (1u << rows) - 1);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            _mm512_mask_storeu_ps(t.y + static_cast<size_t>(c) * t.y_stride + g * kGroupRows, mask, acc[g][c]);
    }
}

template <int G, int C>
void bf16_dot_cols(const Tile& t) {
    if (t.n_cols == C) return bf16_dot_run<G, C>(t);
    if constexpr (C > 1) bf16_dot_cols<G, C - 1>(t);
}

template <int G>
void bf16_dot_groups(const Tile& t) {
    if (t.n_rows > (G - 1) * kGroupRows) return bf16_dot_cols<G, kMaxCols>(t);
    if constexpr (G > 1) bf16_dot_groups<G - 1>(t);
}

void bf16_dot_tile(const Tile& t) { bf16_dot_groups<kMaxGroups>(t); }

}  // namespace

TypeKernel packed_avx512_bf16_dot_kernel() {
    return {bf16_dot_tile, kMaxGroups * kGroupRows, kMaxCols, ActivationFormat::BF16Pairs};
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
TypeKernel packed_avx512_bf16_dot_kernel() { return {}; }
}  // namespace cria::matmul::detail

#endif
