// AVX-512 VNNI kernels for Rows16-packed weights (see cria/matmul/packing.h).
//
// Per block of 32 values and group of 16 rows, the weights are 8 registers
// W0..W7 of unsigned bytes: lane r of Wj holds row r's values 4j..4j+3. With
// activation dword j (its 4 quants) broadcast to every lane, one vpdpbusd
// adds those 4 products for all 16 rows at once, so 8 of them give the 16
// rows' block dot products in one register, with no shuffles and no
// horizontal sums. The unsigned offset o of the weights (8 for Q4_0's
// nibbles, 128 for the others) is removed exactly by starting the sum from
// -o * (sum of the block's activation quants).
//
// The float part then costs one multiply-add per block for 16 rows. Against
// the row kernels this cuts the instructions per weight about fourfold, which
// is what lets one core keep up with its share of the memory bandwidth.

#include <algorithm>
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

// How far ahead of the block being multiplied the weights are prefetched:
// 4 KiB, about 150 ns of one core's stream, longer than a DRAM access
// (2 KiB was shorter). Single-thread CPU time of matrix x vector
// (bench_matmul_vec, packed, 2048x8192 and the 1024-wide shapes, three
// interleaved rounds on a loaded machine): Q4_0, Q8_0, Q4_K and F16 5-15%
// lower than with 2 KiB in most rounds, never clearly higher.
constexpr size_t kPrefetchDistance = 4096;

// Writes the tile's rows (at most 16) of each column's 16 row sums.
template <int C>
inline void store_rows16(const Tile& t, const __m512 (&acc)[C]) {
    const __mmask16 rows = static_cast<__mmask16>((1u << t.n_rows) - 1);
    for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(t.y + static_cast<size_t>(c) * t.y_stride, rows, acc[c]);
}

// The tile function of a kernel written for a compile-time column count.
template <template <int> class Run>
void rows16_tile_of(const Tile& t) {
    switch (t.n_cols) {
        case 1: Run<1>::run(t); break;
        case 2: Run<2>::run(t); break;
        case 3: Run<3>::run(t); break;
        default: Run<4>::run(t); break;
    }
}

// The 16 rows' scales of one block, as floats.
struct F16Scales {
    static constexpr size_t kScaleBytes = 2 * kGroupRows;
    static __m512 scales(const uint8_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
};
// MXFP4: one E8M0 exponent per row, as 2^(e-128) (half the scale: the code
// book holds doubled values), exactly as e8m0_to_f32_half: e < 2 gives the
// subnormals 0x00200000 << e, otherwise the exponent field e - 1.
struct E8M0Scales {
    static constexpr size_t kScaleBytes = kGroupRows;
    static __m512 scales(const uint8_t* p) {
        const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i small = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
        const __mmask16 is_small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
        return _mm512_castsi512_ps(_mm512_mask_blend_epi32(is_small, normal, small));
    }
};

// Decoders: the 8 weight registers of one block from its quant bytes.
struct UnpackQ4_0 : F16Scales {
    static constexpr size_t kQuantBytes = 16 * kGroupRows;
    static constexpr int kOffset = 8;
    static void unpack(const uint8_t* q, __m512i w[8]) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        for (int j = 0; j < 4; ++j) {
            const __m512i p = _mm512_loadu_si512(q + 64 * j);
            w[j] = _mm512_and_si512(p, low);
            w[j + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), low);
        }
    }
    // Registers j and j + 4 alone (j < 4): one load's low and high nibbles.
    static void unpack_pair(const uint8_t* q, int j, __m512i& first, __m512i& second) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        const __m512i p = _mm512_loadu_si512(q + 64 * j);
        first = _mm512_and_si512(p, low);
        second = _mm512_and_si512(_mm512_srli_epi16(p, 4), low);
    }
};

struct UnpackIq4Nl : F16Scales {
    static constexpr size_t kQuantBytes = 16 * kGroupRows;
    static constexpr int kOffset = 128;
    static void unpack(const uint8_t* q, __m512i w[8]) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kCodeTables.iq4nl)));
        for (int j = 0; j < 4; ++j) {
            const __m512i p = _mm512_loadu_si512(q + 64 * j);
            w[j] = _mm512_shuffle_epi8(table, _mm512_and_si512(p, low));
            w[j + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(p, 4), low));
        }
    }
    static void unpack_pair(const uint8_t* q, int j, __m512i& first, __m512i& second) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kCodeTables.iq4nl)));
        const __m512i p = _mm512_loadu_si512(q + 64 * j);
        first = _mm512_shuffle_epi8(table, _mm512_and_si512(p, low));
        second = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(p, 4), low));
    }
};

struct UnpackMxfp4 : E8M0Scales {
    static constexpr size_t kQuantBytes = 16 * kGroupRows;
    static constexpr int kOffset = 128;
    static void unpack(const uint8_t* q, __m512i w[8]) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kCodeTables.mxfp4)));
        for (int j = 0; j < 4; ++j) {
            const __m512i p = _mm512_loadu_si512(q + 64 * j);
            w[j] = _mm512_shuffle_epi8(table, _mm512_and_si512(p, low));
            w[j + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(p, 4), low));
        }
    }
    static void unpack_pair(const uint8_t* q, int j, __m512i& first, __m512i& second) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kCodeTables.mxfp4)));
        const __m512i p = _mm512_loadu_si512(q + 64 * j);
        first = _mm512_shuffle_epi8(table, _mm512_and_si512(p, low));
        second = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(p, 4), low));
    }
};

struct UnpackQ8_0 : F16Scales {
    static constexpr size_t kQuantBytes = 32 * kGroupRows;
    static constexpr int kOffset = 128;
    static void unpack(const uint8_t* q, __m512i w[8]) {
        for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(q + 64 * j);
    }
    static void unpack_pair(const uint8_t* q, int j, __m512i& first, __m512i& second) {
        first = _mm512_loadu_si512(q + 64 * j);
        second = _mm512_loadu_si512(q + 64 * (j + 4));
    }
};

template <class U, int C>
void rows16_run(const Tile& t) {
    const int64_t nb = t.k / 32;
    const size_t scale_off = q8_0_planar_scale_offset(t.k), sum_off = q8_0_planar_sum_offset(t.k);
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* q = t.w + rows16_quants_offset(b, U::kQuantBytes, U::kScaleBytes);
        // One prefetch per 64 bytes of the stream: a block and its half of
        // the pair's 64 scale bytes.
        for (size_t line = 0; line <= U::kQuantBytes; line += 64)
            _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchDistance + line), _MM_HINT_T0);
        __m512i w[8];
        U::unpack(q, w);
        const __m512 dw = U::scales(t.w + rows16_scales_offset(b, nb, U::kQuantBytes, U::kScaleBytes));
        for (int c = 0; c < C; ++c) {
            const uint8_t* act = t.a + static_cast<size_t>(c) * t.a_stride;
            const auto* aq = reinterpret_cast<const int32_t*>(act) + 8 * b;
            const float da = reinterpret_cast<const float*>(act + scale_off)[b];
            const int32_t sum = reinterpret_cast<const int32_t*>(act + sum_off)[b];
            // Two chains of four, so the dependent vpdpbusd latency overlaps.
            __m512i s0 = _mm512_set1_epi32(-U::kOffset * sum), s1 = _mm512_setzero_si512();
            for (int j = 0; j < 4; ++j) {
                s0 = _mm512_dpbusd_epi32(s0, w[j], _mm512_set1_epi32(aq[j]));
                s1 = _mm512_dpbusd_epi32(s1, w[j + 4], _mm512_set1_epi32(aq[j + 4]));
            }
            const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
            acc[c] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc[c]);
        }
    }
    store_rows16<C>(t, acc);
}

// Two groups (32 rows) per tile, for products with many columns: each
// activation broadcast then feeds two vpdpbusd instead of one, which halves
// the broadcast loads that otherwise bound the loop (one per vpdpbusd), and
// one offset correction serves both groups. The second group's weights are
// t.w_stride bytes after the first's. Every row is computed with the same
// operations as in rows16_run (the integer sum is exact whatever its order),
// so a row's result does not depend on which kernel or tile holds it.
// The 32-value block types (Q4_0, IQ4_NL, Q8_0, MXFP4) for products of many
// columns: tiles of G groups (16G rows, the groups t.w_stride apart) x C
// columns. Each activation broadcast feeds G vpdpbusd and each unpacked
// weight register C of them; the loop runs weight register outer, column and
// group inner, so the G x C integer sums are independent chains that hide
// the instruction's latency (the order rows32 had before, one column's 16
// vpdpbusd in two chains at a time, left them waiting). Every row is
// computed with the same operations as in rows16_run (the integer sum is
// exact whatever its order; the float steps per block are the same), so a
// row's result does not depend on which kernel or tile holds it.
template <class U, int G, int C>
void groups_blocks32_run(const Tile& t) {
    const int64_t nb = t.k / 32;
    const size_t scale_off = q8_0_planar_scale_offset(t.k), sum_off = q8_0_planar_sum_offset(t.k);
    __m512 acc[G][C];
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const size_t qoff = rows16_quants_offset(b, U::kQuantBytes, U::kScaleBytes);
        const uint8_t* q[G];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            q[g] = t.w + static_cast<size_t>(g) * t.w_stride + qoff;
            for (size_t line = 0; line <= U::kQuantBytes; line += 64)
                _mm_prefetch(reinterpret_cast<const char*>(q[g] + kPrefetchDistance + line), _MM_HINT_T0);
        }
        const int32_t* aq[C];
        __m512i s[G][C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            const uint8_t* act = t.a + static_cast<size_t>(c) * t.a_stride;
            aq[c] = reinterpret_cast<const int32_t*>(act) + 8 * b;
            const __m512i start = _mm512_set1_epi32(-U::kOffset * reinterpret_cast<const int32_t*>(act + sum_off)[b]);
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) s[g][c] = start;
        }
        // Weight register outer, column inner: G x C independent chains, so
        // the vpdpbusd latency hides behind the other columns' ones.
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            #pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                __m512i w[G];
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g) {
                    __m512i lo, hi;
                    U::unpack_pair(q[g], j, lo, hi);
                    w[g] = half ? hi : lo;
                }
                #pragma GCC unroll 16
                for (int c = 0; c < C; ++c) {
                    const __m512i x = _mm512_set1_epi32(aq[c][j + 4 * half]);
                    #pragma GCC unroll 16
                    for (int g = 0; g < G; ++g) s[g][c] = _mm512_dpbusd_epi32(s[g][c], w[g], x);
                }
            }
        }
        const size_t soff = rows16_scales_offset(b, nb, U::kQuantBytes, U::kScaleBytes);
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            const __m512 dw = U::scales(t.w + static_cast<size_t>(g) * t.w_stride + soff);
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                const __m512 da = _mm512_set1_ps(reinterpret_cast<const float*>(t.a + static_cast<size_t>(c) * t.a_stride + scale_off)[b]);
                acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g][c]), _mm512_mul_ps(dw, da), acc[g][c]);
            }
        }
    }
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
        Tile part = t;
        part.n_rows = std::min(kGroupRows, t.n_rows - g * kGroupRows);
        part.y = t.y + g * kGroupRows;
        store_rows16<C>(part, acc[g]);
    }
}

// The tile function: as many groups as the tile's rows need, up to G.
template <class U, int G, int C>
void groups_blocks32_tile(const Tile& t) {
    if constexpr (G > 1)
        if (t.n_rows <= kGroupRows * (G - 1)) return groups_blocks32_tile<U, G - 1, C>(t);
    groups_blocks32_run<U, G, C>(t);
}
template <class U, int G, int C>
void groups_blocks32_cols(const Tile& t) {
    if constexpr (C > 1)
        if (t.n_cols < C) return groups_blocks32_cols<U, G, C - 1>(t);
    groups_blocks32_tile<U, G, C>(t);
}


// Q4_K (layout in packing.h). Per 64-value chunk j the 8 quant registers
// give 8 low-nibble registers (sub-block 2j) and 8 high-nibble ones
// (sub-block 2j + 1); each sub-block's 16 row sums are scaled by the rows'
// 6-bit scales in int32 (exact: |sum| < 2^31). The mins meet the Q8_K
// activation sums of each 32-value sub-block, also in int32; d and dmin come
// in once per super-block, in float.
//
// Q5_K (Five) is the same product with each quant's fifth bit joined in
// before the vpdpbusd: qh register t, shifted so that chunk j's bit (2j for
// the low nibbles, 2j + 1 for the high ones) lands on bit 4 of its byte, is
// masked to that bit and or-ed in, one vpternlogd per register.
template <bool Five>
inline __m512i with_fifth_bit(__m512i nibbles, const __m512i& high, int bit, const __m512i& bit4) {
    if constexpr (!Five) return nibbles;
    // 16-bit shifts by at most 4 keep bit 4 of each byte within its byte.
    const __m512i moved = bit < 4 ? _mm512_slli_epi16(high, static_cast<unsigned>(4 - bit))
                                  : _mm512_srli_epi16(high, static_cast<unsigned>(bit - 4));
    return _mm512_ternarylogic_epi32(nibbles, moved, bit4, 0xF8);  // nibbles | (moved & bit4)
}

template <bool Five, int C>
void rows16_q4_k_run(const Tile& t) {
    constexpr size_t kQuants = 2048, kHigh = Five ? 512 : 0, kScales = 256;
    constexpr size_t kSuper = kQuants + kHigh + kScales + 64;
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    const int64_t nb = t.k / 256;
    const __m512i low = _mm512_set1_epi8(0x0F);
    __m512 acc[C];
    #pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sb = t.w + static_cast<size_t>(b) * kSuper;
        const block_q8_K* act[C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            act[c] = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride) + b;
        __m512i isum[C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
            const uint8_t* q = sb + 512 * j;
            if constexpr (Five) {
                // The next super-block's 45 lines, a quarter per chunk.
                for (size_t line = 12 * 64 * static_cast<size_t>(j); line < 12 * 64 * static_cast<size_t>(j + 1) && line < kSuper; line += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(sb + kSuper + line), _MM_HINT_T0);
            } else {
                for (size_t line = 0; line < 512; line += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchDistance + line), _MM_HINT_T0);
            }
            __m512i lo[8], hi[8];
            #pragma GCC unroll 16
            for (int r = 0; r < 8; ++r) {
                const __m512i p = _mm512_loadu_si512(q + 64 * r);
                lo[r] = _mm512_and_si512(p, low);
                hi[r] = _mm512_and_si512(_mm512_srli_epi16(p, 4), low);
                if constexpr (Five) {
                    const __m512i h = _mm512_loadu_si512(sb + kQuants + 64 * r);
                    lo[r] = with_fifth_bit<Five>(lo[r], h, 2 * j, bit4);
                    hi[r] = with_fifth_bit<Five>(hi[r], h, 2 * j + 1, bit4);
                }
            }
            const uint8_t* scales = sb + kQuants + kHigh;
            const __m512i scale_lo = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 32 * j)));
            const __m512i scale_hi = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 32 * j + 16)));
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                const auto* aq = reinterpret_cast<const int32_t*>(act[c]->qs) + 16 * j;
                __m512i s_lo = _mm512_setzero_si512(), s_hi = _mm512_setzero_si512();
                #pragma GCC unroll 16
                for (int r = 0; r < 8; ++r) {
                    s_lo = _mm512_dpbusd_epi32(s_lo, lo[r], _mm512_set1_epi32(aq[r]));
                    s_hi = _mm512_dpbusd_epi32(s_hi, hi[r], _mm512_set1_epi32(aq[8 + r]));
                }
                isum[c] = _mm512_add_epi32(isum[c], _mm512_add_epi32(_mm512_mullo_epi32(s_lo, scale_lo),
                                                                     _mm512_mullo_epi32(s_hi, scale_hi)));
            }
        }
        const uint8_t* ds = sb + kQuants + kHigh + kScales;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ds)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ds + 32)));
        // The mins' sums only now, column by column, so that no register
        // holds them through the chunks (the chunk loop needs all 32).
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            __m512i msum = _mm512_setzero_si512();
            for (int sub = 0; sub < 8; ++sub) {
                const __m512i mins =
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQuants + kHigh + 128 + 16 * sub)));
                const int32_t bsum = act[c]->bsums[2 * sub] + act[c]->bsums[2 * sub + 1];
                msum = _mm512_add_epi32(msum, _mm512_mullo_epi32(mins, _mm512_set1_epi32(bsum)));
            }
            const __m512 da = _mm512_set1_ps(act[c]->d);
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, da), acc[c]);
            acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, da), acc[c]);
        }
    }
    store_rows16<C>(t, acc);
}

// Q4_K/Q5_K over G groups of 16 rows (w_stride apart) and C columns: per
// 32-value sub-block and weight register r, the G groups' registers are
// unpacked (only G live at a time) and each column's activation dword,
// broadcast once, feeds G vpdpbusd. On Zen 5 a broadcast load costs about
// as much issue bandwidth as a vpdpbusd (8 chains fed by one broadcast each
// ran at 0.70 of the rate with register operands), so sharing it by G rows
// groups is what pays. Integer sums are exact whatever their order and the
// float part is rows16_q4_k_run's, so a row's result does not depend on the
// kernel.
template <bool Five, int G, int C>
void groups_q4_k_run(const Tile& t) {
    constexpr size_t kQuants = 2048, kHigh = Five ? 512 : 0, kScales = 256;
    constexpr size_t kSuper = kQuants + kHigh + kScales + 64;
    const __m512i bit4 = _mm512_set1_epi8(0x10), low = _mm512_set1_epi8(0x0F);
    const int64_t nb = t.k / 256;
    __m512 acc[G][C];
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sb[G];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * kSuper;
        const block_q8_K* act[C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            act[c] = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride) + b;
        __m512i isum[G][C];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g)
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) isum[g][c] = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
            // The next super-block, a quarter per chunk.
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g)
                for (size_t line = (kSuper / 256 + 1) * 64 * static_cast<size_t>(j);
                     line < (kSuper / 256 + 1) * 64 * static_cast<size_t>(j + 1) && line < kSuper; line += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(sb[g] + kSuper + line), _MM_HINT_T0);
            #pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                __m512i s[G][C];
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g)
                    #pragma GCC unroll 16
                    for (int c = 0; c < C; ++c) s[g][c] = _mm512_setzero_si512();
                #pragma GCC unroll 16
                for (int r = 0; r < 8; ++r) {
                    __m512i w[G];
                    #pragma GCC unroll 16
                    for (int g = 0; g < G; ++g) {
                        const __m512i p = _mm512_loadu_si512(sb[g] + 512 * j + 64 * r);
                        w[g] = _mm512_and_si512(half ? _mm512_srli_epi16(p, 4) : p, low);
                        if constexpr (Five)
                            w[g] = with_fifth_bit<Five>(w[g], _mm512_loadu_si512(sb[g] + kQuants + 64 * r), 2 * j + half, bit4);
                    }
                    #pragma GCC unroll 16
                    for (int c = 0; c < C; ++c) {
                        const __m512i x = _mm512_set1_epi32(reinterpret_cast<const int32_t*>(act[c]->qs)[16 * j + 8 * half + r]);
                        #pragma GCC unroll 16
                        for (int g = 0; g < G; ++g) s[g][c] = _mm512_dpbusd_epi32(s[g][c], w[g], x);
                    }
                }
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g) {
                    const __m512i scale = _mm512_cvtepu8_epi32(
                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[g] + kQuants + kHigh + 32 * j + 16 * half)));
                    #pragma GCC unroll 16
                    for (int c = 0; c < C; ++c) isum[g][c] = _mm512_add_epi32(isum[g][c], _mm512_mullo_epi32(s[g][c], scale));
                }
            }
        }
        // The scaled sums first (their registers are then free), then the
        // mins (subtract_k_mins, packed_avx512_common.h).
        add_scaled_sums<G, C>(isum, sb, kQuants + kHigh + kScales, act, acc);
        subtract_k_mins<G, C>(sb, kQuants + kHigh, act, acc);
    }
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
        Tile part = t;
        part.y = t.y + kGroupRows * g;
        part.n_rows = t.n_rows - kGroupRows * g < kGroupRows ? t.n_rows - kGroupRows * g : kGroupRows;
        store_rows16<C>(part, acc[g]);
    }
}

// The tile function of groups_q4_k_run: as many groups as the tile's rows
// need (the last tile of a matrix may have fewer), columns 1..C.
template <bool Five, int G, int C>
void groups_q4_k_cols(const Tile& t) {
    if constexpr (C > 1)
        if (t.n_cols < C) return groups_q4_k_cols<Five, G, C - 1>(t);
    groups_q4_k_run<Five, G, C>(t);
}
template <bool Five, int G, int C>
void groups_q4_k_tile(const Tile& t) {
    if constexpr (G > 1)
        if (t.n_rows <= kGroupRows * (G - 1)) return groups_q4_k_tile<Five, G - 1, C>(t);
    groups_q4_k_cols<Five, G, C>(t);
}

// Q6_K (layout in packing.h). For each half n of the super-block and
// dword t of its first 32 ql/qh bytes, two ql registers (A: bytes 4t.., B:
// bytes 32 + 4t..) and one qh register (H) give four registers of unsigned
// 6-bit quants u = q + 32: values 128n + 32m + 4t.. for m = 0..3. A 16-value
// sub-block g = 8n + 2m + t/4 is 4 of them; its chain starts from
// -32 * (its activation sum) so the offset cancels exactly, and its sum is
// scaled by the rows' int8 scales in int32 (|sum| < 2^31).
template <int C>
void rows16_q6_k_run(const Tile& t) {
    constexpr size_t kQl = 2048, kQh = 1024, kScales = 256, kSuper = kQl + kQh + kScales + 64;
    const int64_t nb = t.k / 256;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(0x3F);
    __m512 acc[C];
    #pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sb = t.w + static_cast<size_t>(b) * kSuper;
        const block_q8_K* act[C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            act[c] = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride) + b;
        __m512i isum[C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
        for (int n = 0; n < 2; ++n) {
            for (int h = 0; h < 2; ++h) {  // t = 4h .. 4h + 3: sub-blocks 8n + 2m + h
                // The next super-block (53 lines), a quarter per (n, h).
                for (size_t line = 0; line < 14; ++line)
                    _mm_prefetch(reinterpret_cast<const char*>(sb + kSuper + (14 * (2 * n + h) + line) * 64), _MM_HINT_T0);
                __m512i u[4][4];  // [m][t - 4h]
                for (int i = 0; i < 4; ++i) {
                    const int tt = 4 * h + i;
                    const __m512i a = _mm512_loadu_si512(sb + 64 * (16 * n + tt));
                    const __m512i bq = _mm512_loadu_si512(sb + 64 * (16 * n + 8 + tt));
                    const __m512i hb = _mm512_loadu_si512(sb + kQl + 64 * (8 * n + tt));
                    // (low nibble of x) | (bits 4, 5 of y): one bit select, one mask.
                    const auto join = [&](__m512i x, __m512i y) {
                        return _mm512_and_si512(_mm512_ternarylogic_epi32(m4, x, y, 0xCA), m6);
                    };
                    u[0][i] = join(a, _mm512_slli_epi16(hb, 4));
                    u[1][i] = join(bq, _mm512_slli_epi16(hb, 2));
                    u[2][i] = join(_mm512_srli_epi16(a, 4), hb);
                    u[3][i] = join(_mm512_srli_epi16(bq, 4), _mm512_srli_epi16(hb, 2));
                }
                for (int m = 0; m < 4; ++m) {
                    const int g = 8 * n + 2 * m + h;
                    const __m512i scale =
                        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQl + kQh + 16 * g)));
                    #pragma GCC unroll 16
                    for (int c = 0; c < C; ++c) {
                        const auto* aq = reinterpret_cast<const int32_t*>(act[c]->qs) + 4 * g;
                        __m512i s = _mm512_set1_epi32(-32 * act[c]->bsums[g]);
                        for (int i = 0; i < 4; ++i) s = _mm512_dpbusd_epi32(s, u[m][i], _mm512_set1_epi32(aq[i]));
                        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(s, scale));
                    }
                }
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + kQl + kQh + kScales)));
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, _mm512_set1_ps(act[c]->d)), acc[c]);
    }
    store_rows16<C>(t, acc);
}

// F16/BF16: per k, one register of the 16 rows' values times the broadcast
// activation of each column. U accumulators per column hide the FMA latency
// when there are few columns.
template <bool Bf16>
inline __m512 load_half16(const uint8_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (Bf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

template <bool Bf16, int C>
void rows16_half_run(const Tile& t) {
    constexpr int U = C >= 4 ? 1 : 4 / C;
    __m512 acc[C][U];
    #pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
        #pragma GCC unroll 16
        for (int u = 0; u < U; ++u) acc[c][u] = _mm512_setzero_ps();
    const float* x[C];
    #pragma GCC unroll 16
    for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const float*>(t.a + static_cast<size_t>(c) * t.a_stride);
    int64_t i = 0;
    for (; i + U <= t.k; i += U) {
        const uint8_t* w = t.w + static_cast<size_t>(i) * 32;
        _mm_prefetch(reinterpret_cast<const char*>(w + kPrefetchDistance), _MM_HINT_T0);
        if (U > 2) _mm_prefetch(reinterpret_cast<const char*>(w + kPrefetchDistance + 64), _MM_HINT_T0);
        #pragma GCC unroll 16
        for (int u = 0; u < U; ++u) {
            const __m512 wv = load_half16<Bf16>(w + 32 * u);
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) acc[c][u] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[c][i + u]), acc[c][u]);
        }
    }
    for (; i < t.k; ++i) {
        const __m512 wv = load_half16<Bf16>(t.w + static_cast<size_t>(i) * 32);
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) acc[c][0] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[c][i]), acc[c][0]);
    }
    __m512 sums[C];
    #pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
        sums[c] = acc[c][0];
        for (int u = 1; u < U; ++u) sums[c] = _mm512_add_ps(sums[c], acc[c][u]);
    }
    store_rows16<C>(t, sums);
}

// G groups (16 G rows) per tile: G x C independent accumulators instead of
// C keep both FMA pipes busy (with C = 4 and one group, 4 chains cannot cover
// the FMA latency), each activation broadcast feeds G FMAs, and a product of
// few columns reads G weight streams side by side. Per row, the same operations in the same order
// as rows16_half_run<Bf16, C> (including its U partial sums for C < 4), so a
// row's result does not depend on the kernel that computed it. A tile of
// fewer rows runs with fewer groups.
template <bool Bf16, int G, int C>
void groups_half_run(const Tile& t) {
    if constexpr (G == 1) {
        return rows16_half_run<Bf16, C>(t);
    } else {
        if (t.n_rows <= (G - 1) * kGroupRows) return groups_half_run<Bf16, G - 1, C>(t);
        constexpr int U = C >= 4 ? 1 : 4 / C;
        const uint8_t* w[G];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) w[g] = t.w + static_cast<size_t>(g) * t.w_stride;
        __m512 acc[G][C][U];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g)
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c)
                #pragma GCC unroll 16
                for (int u = 0; u < U; ++u) acc[g][c][u] = _mm512_setzero_ps();
        const float* x[C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const float*>(t.a + static_cast<size_t>(c) * t.a_stride);
        const auto step = [&](int64_t i, int u) {
            const size_t off = static_cast<size_t>(i) * 32;
            __m512 wv[G];
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) wv[g] = load_half16<Bf16>(w[g] + off);
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                const __m512 xv = _mm512_set1_ps(x[c][i]);
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g) acc[g][c][u] = _mm512_fmadd_ps(wv[g], xv, acc[g][c][u]);
            }
        };
        int64_t i = 0;
        for (; i + U <= t.k; i += U) {
            const size_t off = static_cast<size_t>(i) * 32;
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) {
                _mm_prefetch(reinterpret_cast<const char*>(w[g] + off + kPrefetchDistance), _MM_HINT_T0);
                if (U > 2) _mm_prefetch(reinterpret_cast<const char*>(w[g] + off + kPrefetchDistance + 64), _MM_HINT_T0);
            }
            #pragma GCC unroll 16
            for (int u = 0; u < U; ++u) step(i + u, u);
        }
        for (; i < t.k; ++i) step(i, 0);
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            __m512 sums[C];
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                sums[c] = acc[g][c][0];
                for (int u = 1; u < U; ++u) sums[c] = _mm512_add_ps(sums[c], acc[g][c][u]);
            }
            Tile part = t;
            part.n_rows = std::min(kGroupRows, t.n_rows - g * kGroupRows);
            part.y = t.y + g * kGroupRows;
            store_rows16<C>(part, sums);
        }
    }
}

// Groups per tile of the kernel for many columns: 2 x 8 columns (below). Three
// groups measured the same (F16 2048x2048 x 512, one thread: 19.1-19.8 ms
// CPU either way).
constexpr int kHalfWideGroups = 2;
template <bool Bf16, int C>
void rows32_half_run(const Tile& t) { groups_half_run<Bf16, kHalfWideGroups, C>(t); }

// Column-count adapters for rows16_tile_of.
template <class U>
struct Blocks32 {
    template <int C>
    struct Run {
        static void run(const Tile& t) { rows16_run<U, C>(t); }
    };
};
template <int C>
struct Q4KRun {
    static void run(const Tile& t) { rows16_q4_k_run<false, C>(t); }
};
template <int C>
struct Q5KRun {
    static void run(const Tile& t) { rows16_q4_k_run<true, C>(t); }
};
template <int C>
struct Q6KRun {
    static void run(const Tile& t) { rows16_q6_k_run<C>(t); }
};
// Groups per tile of the kernel for few columns (decode, small batches): one.
// Four groups (four weight streams side by side, per row the same
// operations) took less CPU time on matrices the cache holds (one thread,
// F16 matrix x vector, bench_matmul_vec, loaded: 2048x8192 1.22-1.47 ->
// 1.08-1.12 ms, 8192x2048 1.32-1.46 -> 0.97-0.98), but none on those read
// from memory, which is what a model's decode reads (2048x128256 two threads,
// best of 3: 34.1 ms either way; 1024x151936 17.4 -> 18.0), and whole-model
// tg64 of the F16 Llama-1B file, interleaved on the loaded machine, came out
// 5.7 t/s with one group against 5.2 with four (noisy, but not a gain).
constexpr int kHalfNarrowGroups = 1;
template <bool Bf16>
struct Half {
    template <int C>
    struct Run {
        static void run(const Tile& t) { groups_half_run<Bf16, kHalfNarrowGroups, C>(t); }
    };
};

// Columns per tile of the F16/BF16 f32 FMA kernel for many columns: 2 x 8 =
// 16 accumulators, twice the FMA latency x pipes (8) of the cores measured,
// so a late load or a conversion does not stall both pipes; each weight
// register (converted once) feeds 8 FMAs. CPU time of one thread, F16
// 2048x2048 x 512 (bench_matmul_mat, Zen 5 class, loaded): 4 columns 21-23 ms
// (~190 GFLOP/s, 0.77-0.81 of the f32 FMA peak), 6: 18.5 ms, 8: 18.3 ms
// (235 GFLOP/s, 0.94), 12: 19.3 ms. Every column count from 4 on sums a row
// in one chain over k (U = 1), so the wider tile changes no result.
// F16 8192x2048 (k = 8192): 4 columns 86-100 ms, 8: 77 ms (224 GFLOP/s, 0.90).
constexpr int kHalfWideCols = 8;

static_assert(kHalfWideCols == 8, "half_wide_tile splits its tiles on the narrow kernel's 4-column grid");

// A full tile of 8 columns in one pass; a shorter one (the last of a task) as
// the narrow kernel's tiles of 4 columns and its rest, so that every column
// is summed in the order (U) the 4-column tiles of the narrow kernel give
// it, whichever kernel and tile width computed it (matmul_id uses the narrow
// kernel for any column count: it must agree with matmul bit for bit).
template <bool Bf16>
void half_wide_tile(const Tile& t) {
    if (t.n_cols == kHalfWideCols) return rows32_half_run<Bf16, kHalfWideCols>(t);
    Tile part = t;
    if (t.n_cols > 4) {
        part.n_cols = 4;
        rows32_half_run<Bf16, 4>(part);
        part.n_cols = t.n_cols - 4;
        part.a = t.a + 4 * t.a_stride;
        part.y = t.y + 4 * t.y_stride;
    }
    switch (part.n_cols) {
        case 1: return rows32_half_run<Bf16, 1>(part);
        case 2: return rows32_half_run<Bf16, 2>(part);
        case 3: return rows32_half_run<Bf16, 3>(part);
        default: return rows32_half_run<Bf16, 4>(part);
    }
}

}  // namespace

// Tile of the 32-value block types' wide kernel: 3 groups (48 rows) x 4
// columns: 12 integer and 12 float accumulators, 3 weight registers and a
// broadcast, no spills. CPU time of one thread, 2048x2048 x 512 columns
// (bench_matmul_mat, packed, best of 3 per round, rounds interleaved, loaded
// machine), against the former 32 x 4 kernel (one column's chains at a time):
// Q4_0 7.5-8.5 -> 6.9-7.1 ms, IQ4_NL 7.4 -> 6.55, Q8_0 6.84-7.4 -> 6.54-6.78;
// with the new loop order 32 x 4 gave Q4_0 7.2-7.4, 48 x 3 7.7-8.2,
// 64 x 3 7.8-8.7, 64 x 2 9.0-9.7 (Q8_0 likewise: 48 x 4 best).
constexpr int kBlocks32WideGroups = 3;
constexpr int kBlocks32WideCols = 4;

TypeKernel packed_avx512_wide_kernel(ElementType t, Packing p) {
    if (p != Packing::Rows16) return {};
    constexpr int kRows = 2 * kGroupRows;
    switch (t) {
        case ElementType::Q4_0: return {groups_blocks32_cols<UnpackQ4_0, kBlocks32WideGroups, kBlocks32WideCols>, kBlocks32WideGroups * kGroupRows, kBlocks32WideCols, ActivationFormat::Q8_0Planar};
        case ElementType::IQ4_NL: return {groups_blocks32_cols<UnpackIq4Nl, kBlocks32WideGroups, kBlocks32WideCols>, kBlocks32WideGroups * kGroupRows, kBlocks32WideCols, ActivationFormat::Q8_0Planar};
        case ElementType::Q8_0: return {groups_blocks32_cols<UnpackQ8_0, kBlocks32WideGroups, kBlocks32WideCols>, kBlocks32WideGroups * kGroupRows, kBlocks32WideCols, ActivationFormat::Q8_0Planar};
        case ElementType::MXFP4: return {groups_blocks32_cols<UnpackMxfp4, kBlocks32WideGroups, kBlocks32WideCols>, kBlocks32WideGroups * kGroupRows, kBlocks32WideCols, ActivationFormat::Q8_0Planar};
        // Q4_K: 32 x 4 (each broadcast feeds two vpdpbusd), measured in
        // bench/README.md. Q5_K and Q6_K: panels of 48 rows x 64 columns,
        // unpacked once per panel (packed_k_panel_avx512.cpp; tiles of 48 x 4
        // inside).
        case ElementType::Q4_K: return {groups_q4_k_tile<false, 2, 4>, kRows, 4, ActivationFormat::Q8_K};
        case ElementType::Q5_K:
        case ElementType::Q6_K: return packed_avx512_k_panel_kernel(t);
        case ElementType::IQ4_XS: return packed_avx512_iq4_xs_wide_kernel();  // packed_kernels_iq4_xs_avx512.cpp
        case ElementType::F16: return {half_wide_tile<false>, kHalfWideGroups * kGroupRows, kHalfWideCols, ActivationFormat::F32};
        case ElementType::BF16: return {half_wide_tile<true>, kHalfWideGroups * kGroupRows, kHalfWideCols, ActivationFormat::F32};
        default: return {};
    }
}

TypeKernel packed_avx512_kernel(ElementType t, Packing p) {
    if (p != Packing::Rows16) return {};
    switch (t) {
        case ElementType::Q4_0: return {rows16_tile_of<Blocks32<UnpackQ4_0>::Run>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::IQ4_NL: return {rows16_tile_of<Blocks32<UnpackIq4Nl>::Run>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::Q8_0: return {rows16_tile_of<Blocks32<UnpackQ8_0>::Run>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::MXFP4: return {rows16_tile_of<Blocks32<UnpackMxfp4>::Run>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::Q4_K: return {rows16_tile_of<Q4KRun>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::Q5_K: return {rows16_tile_of<Q5KRun>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::Q6_K: return {rows16_tile_of<Q6KRun>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::IQ4_XS: return packed_avx512_iq4_xs_kernel();  // packed_kernels_iq4_xs_avx512.cpp
        case ElementType::F16: return {rows16_tile_of<Half<false>::Run>, kHalfNarrowGroups * kGroupRows, 4, ActivationFormat::F32};
        case ElementType::BF16: return {rows16_tile_of<Half<true>::Run>, kHalfNarrowGroups * kGroupRows, 4, ActivationFormat::F32};
        default: return {};
    }
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
TypeKernel packed_avx512_kernel(ElementType, Packing) { return {}; }
TypeKernel packed_avx512_wide_kernel(ElementType, Packing) { return {}; }
}  // namespace cria::matmul::detail

#endif
