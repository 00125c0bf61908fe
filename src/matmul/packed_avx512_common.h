#pragma once
// What the AVX-512 VNNI kernels for Rows16-packed weights share
// (packed_kernels_avx512.cpp, packed_k_panel_avx512.cpp,
// packed_kernels_iq4_xs_avx512.cpp): the group height, the store of a
// group's row sums, and the float steps of a K-quant super-block (its
// scaled int32 sums times d, and Q4_K/Q5_K's mins times dmin). One copy
// keeps the kernels' float operations the same, in the same order, which
// is what makes a row's result bit for bit the same whichever of them runs.
//
// Include it only inside an #if defined(__x86_64__) block, after the
// including file's `#pragma GCC target(...avx512...)`: the helpers take
// that target from it. Everything is internal to the including file.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cria/quant/blocks.h"
#include "matmul/kernels.h"

namespace cria::matmul::detail {
namespace {

using cria::quant::block_q8_K;

constexpr int kGroupRows = 16;

// Rows [0, n_rows) of group g's 16 sums of column c.
[[gnu::always_inline]] inline void store_group(const Tile& t, int g, int c, __m512 v) {
    const int rows = t.n_rows - kGroupRows * g < kGroupRows ? t.n_rows - kGroupRows * g : kGroupRows;
    const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1);
    _mm512_mask_storeu_ps(t.y + static_cast<size_t>(c) * t.y_stride + static_cast<size_t>(kGroupRows * g), mask, v);
}

// acc[g][c] += isum[g][c] * (d * da): d the 16 rows' f16 scales at
// sb[g] + d_offset, da column c's activation scale. acc is any array (or
// pointer to rows) indexed [group][column].
template <int G, int C, class Acc>
[[gnu::always_inline]] inline void add_scaled_sums(const __m512i (&isum)[G][C], const uint8_t* const* sb, size_t d_offset,
                                                   const block_q8_K* const* act, Acc&& acc) {
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb[g] + d_offset)));
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[g][c]), _mm512_mul_ps(d, _mm512_set1_ps(act[c]->d)), acc[g][c]);
    }
}

// Q4_K/Q5_K's mins step (the scales' part of the Rows16 super-block,
// packing.h, at sb[g] + scales_offset: 8 x 16 scales, 8 x 16 mins, 16 f16
// d, 16 f16 dmin): acc[g][c] -= msum * (dmin * da). Per sub-block, vpdpwssd
// of each row's min as an int16 pair (min, min) with the column's two
// 16-value activation sums (one dword of bsums) adds min * (bsums[2 sub] +
// bsums[2 sub + 1]) in one instruction, exactly (|sum| < 2^22), and the
// pairs are built once for all columns.
template <int G, int C, class Acc>
[[gnu::always_inline]] inline void subtract_k_mins(const uint8_t* const* sb, size_t scales_offset, const block_q8_K* const* act,
                                                   Acc&& acc) {
    constexpr size_t kMins = 128, kDmin = 256 + 32;
    __m512i msum[G][C];
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) msum[g][c] = _mm512_setzero_si512();
    for (int sub = 0; sub < 8; ++sub) {
        __m512i pairs[G];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            // Row r's min (byte r) in both halves of dword r.
            const __m128i m = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[g] + scales_offset + kMins + 16 * sub));
            const __m512i wide = _mm512_cvtepu8_epi32(m);
            pairs[g] = _mm512_or_si512(wide, _mm512_slli_epi32(wide, 16));
        }
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            int32_t two_sums;
            std::memcpy(&two_sums, act[c]->bsums + 2 * sub, 4);
            const __m512i x = _mm512_set1_epi32(two_sums);
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) msum[g][c] = _mm512_dpwssd_epi32(msum[g][c], pairs[g], x);
        }
    }
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb[g] + scales_offset + kDmin)));
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            acc[g][c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum[g][c]), _mm512_mul_ps(dmin, _mm512_set1_ps(act[c]->d)), acc[g][c]);
    }
}

}  // namespace
}  // namespace cria::matmul::detail
