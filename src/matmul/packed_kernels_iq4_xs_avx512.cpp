// AVX-512 VNNI kernels for Rows16 IQ4_XS weights (layout in
// matmul/rows16_iq4_xs.h) times Q8_K activations.
//
// Per 32-value sub-block s and group of 16 rows, 4 quant registers give 8
// registers of unsigned bytes u = q + 128 (the code book kvalues_iq4nl + 128
// looked up by vpshufb, as IQ4_NL's kernels do); with activation dword j of
// the sub-block broadcast, one vpdpbusd adds 4 products for all 16 rows.
// The offset is taken out exactly by starting the sub-block's chain from
// -128 * (sum of its 32 activation quants), made from Q8_K's bsums once per
// super-block and column. Each sub-block's 16 row sums are then scaled by the
// rows' ls - 32 in int32 (exact: |sum| < 2^28 per super-block), so a row's
// super-block is one exact integer, as in the scalar reference
// (superblock_dot), and the float part is that reference's too:
// sum += (d * d_act) * float(isum), a multiply and an add (no FMA). The
// packed kernels therefore equal the scalar reference, packed or plain, bit
// for bit. (The row kernel that runs on unpacked IQ4_XS, SuperBlockKernel,
// sums 16 float lanes and removes the offset in float: it is not, and cannot
// be made, bit-identical to these without a horizontal sum per super-block.)
//
// No horizontal sums and no per-element scale work: one vpmovsxbd per
// sub-block gives the 16 rows' scales; the broadcasts of the activations are
// shared by the G groups of a tile.

#include <cstdint>
#include <cstring>

#include "cria/quant/blocks.h"
#include "matmul/code_tables.h"
#include "matmul/kernels.h"
#include "matmul/rows16_iq4_xs.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's own AVX-512 conversion intrinsics trip -Wmaybe-uninitialized (their
// pass-through operand is undefined by definition); silence that here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "matmul/packed_avx512_common.h"

namespace cria::matmul::detail {
namespace {

// Super-blocks ahead that the weights are prefetched: two (4480 bytes, about
// the 4 KiB the other packed kernels use), a fifth of one per sub-block.
constexpr size_t kPrefetchAhead = 2 * kIq4XsSuper;
constexpr size_t kLinesPerSub = (kIq4XsSuper / 64 + 7) / 8;

// G groups of 16 rows (w_stride apart) times C columns.
template <int G, int C>
void groups_iq4_xs_run(const Tile& t) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kCodeTables.iq4nl)));
    const int64_t nb = t.k / 256;
    __m512 acc[G][C];
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sb[G];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * kIq4XsSuper;
        const block_q8_K* act[C];
        // -128 * (sum of sub-block s's 32 activation quants), s = 0..7: the
        // start of each chain, which removes the weights' offset.
        alignas(32) int32_t start[C][8];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            act[c] = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride) + b;
            const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[c]->bsums));
            _mm256_store_si256(reinterpret_cast<__m256i*>(start[c]), _mm256_madd_epi16(bsums, _mm256_set1_epi16(-128)));
        }
        __m512i isum[G][C];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g)
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) isum[g][c] = _mm512_setzero_si512();
        for (int s = 0; s < 8; ++s) {
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g)
                for (size_t line = 0; line < kLinesPerSub; ++line)
                    _mm_prefetch(reinterpret_cast<const char*>(sb[g] + kPrefetchAhead + (kLinesPerSub * static_cast<size_t>(s) + line) * 64),
                                 _MM_HINT_T0);
            __m512i chain[G][C];
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                const __m512i first = _mm512_set1_epi32(start[c][s]);
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g) chain[g][c] = first;
            }
            #pragma GCC unroll 4
            for (int reg = 0; reg < 4; ++reg) {
                __m512i lo[G], hi[G];
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g) {
                    const __m512i p = _mm512_loadu_si512(sb[g] + 256 * s + 64 * reg);
                    lo[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(p, low));
                    hi[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(p, 4), low));
                }
                #pragma GCC unroll 16
                for (int c = 0; c < C; ++c) {
                    const auto* aq = reinterpret_cast<const int32_t*>(act[c]->qs) + 8 * s;
                    const __m512i x_lo = _mm512_set1_epi32(aq[reg]), x_hi = _mm512_set1_epi32(aq[4 + reg]);
                    #pragma GCC unroll 16
                    for (int g = 0; g < G; ++g) {
                        chain[g][c] = _mm512_dpbusd_epi32(chain[g][c], lo[g], x_lo);
                        chain[g][c] = _mm512_dpbusd_epi32(chain[g][c], hi[g], x_hi);
                    }
                }
            }
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) {
                const __m512i scale =
                    _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[g] + kIq4XsQuants + 16 * s)));
                #pragma GCC unroll 16
                for (int c = 0; c < C; ++c) isum[g][c] = _mm512_add_epi32(isum[g][c], _mm512_mullo_epi32(chain[g][c], scale));
            }
        }
        // The scalar reference's float order: (d * d_act) * isum, then added,
        // each rounded. The explicit-rounding forms keep GCC from fusing the
        // multiply and the add into an FMA (it contracts _mm512_add_ps of a
        // _mm512_mul_ps, which are plain vector arithmetic to it).
        constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb[g] + kIq4XsD)));
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                const __m512 scale = _mm512_mul_round_ps(d, _mm512_set1_ps(act[c]->d), kNearest);
                const __m512 part = _mm512_mul_round_ps(scale, _mm512_cvtepi32_ps(isum[g][c]), kNearest);
                acc[g][c] = _mm512_add_round_ps(acc[g][c], part, kNearest);
            }
        }
    }
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) store_group(t, g, c, acc[g][c]);
}

// The tile function: as many groups as the tile's rows need (the last tile
// of a matrix may have fewer), columns 1..C.
template <int G, int C>
void groups_iq4_xs_cols(const Tile& t) {
    if constexpr (C > 1)
        if (t.n_cols < C) return groups_iq4_xs_cols<G, C - 1>(t);
    groups_iq4_xs_run<G, C>(t);
}
template <int G, int C>
void groups_iq4_xs_tile(const Tile& t) {
    if constexpr (G > 1)
        if (t.n_rows <= kGroupRows * (G - 1)) return groups_iq4_xs_tile<G - 1, C>(t);
    groups_iq4_xs_cols<G, C>(t);
}

// Tile of the kernel for many columns: kWideGroups x 16 rows by kWideCols
// columns (measured in bench/README.md).
constexpr int kWideGroups = 2, kWideCols = 6;

}  // namespace

TypeKernel packed_avx512_iq4_xs_kernel() {
    return {groups_iq4_xs_tile<1, 4>, kGroupRows, 4, ActivationFormat::Q8_K};
}

TypeKernel packed_avx512_iq4_xs_wide_kernel() {
    return {groups_iq4_xs_tile<kWideGroups, kWideCols>, kWideGroups * kGroupRows, kWideCols, ActivationFormat::Q8_K};
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
TypeKernel packed_avx512_iq4_xs_kernel() { return {}; }
TypeKernel packed_avx512_iq4_xs_wide_kernel() { return {}; }
}  // namespace cria::matmul::detail

#endif
