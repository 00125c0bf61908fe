// Q5_K and Q6_K (Rows16) times Q8_K activations for products of many
// columns: a panel of 48 rows and up to 64 columns per call.
//
// Joining a quant's low bits (nibbles) and high bits (Q5_K's fifth bit,
// Q6_K's two qh bits) costs about as many vector instructions as the
// vpdpbusd that use it when a register tile of 5 to 8 columns unpacks the
// weights for itself (groups_q6_k_run and rows16_q4_k_wide_run<true>, the
// kernels before these, removed). Here each super-block of the panel's 48
// rows is unpacked once into a 12 KiB buffer of ready bytes (64 registers
// per 16 rows), which the register tiles of all the call's columns then
// load as they are: the unpacking is shared by up to 64 columns, and the
// inner loop is loads, broadcasts, vpdpbusd and the per-sub-block scaling
// only.
//
// Register tiles of 48 rows x 4 columns: each broadcast activation dword
// feeds 3 vpdpbusd, 12 chains cover the instruction's latency, and 64
// columns are 16 whole tiles. Q6_K, CPU ms, one thread, 4 interleaved
// rounds (bench_matmul_mat matmat512/q6_K/.../packed/1, loaded machine):
// 2048x2048: 32 x 4 7.38-8.24, 32 x 5 7.69-8.67, 48 x 4 7.47-8.63;
// 8192x2048: 32 x 4 31.3-39.1, 32 x 5 32.9-36.3, 48 x 4 29.8-32.0
// (32 x 6 and 48 x 3 were slower in a first round). Q5_K, 3 rounds:
// 2048x2048 32 x 4 8.17-10.1, 32 x 6 8.61-9.15, 32 x 8 8.35-9.94, 16 x 8
// 9.91-11.3, 48 x 4 8.37-9.05; 8192x2048 32 x 4 33.3-38.3, 32 x 6
// 33.9-37.1, 32 x 8 37.6-39.4, 16 x 8 40.6-42.5, 48 x 4 35.2-36.5.
//
// Per row and column the integer sums are exact (whatever their order) and
// the float steps per super-block are those of rows16_q6_k_run and
// rows16_q4_k_run, so a row's result is bit for bit that of the other
// kernels of its type.

#include <cstdint>

#include "cria/quant/blocks.h"
#include "matmul/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "matmul/packed_avx512_common.h"

namespace cria::matmul::detail {
namespace {

constexpr int kMaxGroups = 3;       // most groups of 16 rows per panel
constexpr int kPanelCols = 64;      // columns per call (the driver's column task)
constexpr int kRegisters = 64;      // unpacked registers per group: 256 values x 16 rows

// One sub-block of G groups x C columns: the chains s (started by the
// caller) run over the sub-block's R unpacked registers per group (register
// R sub + i of each group's 64), each column's broadcast activation dword
// (dword R sub + i of its qs) feeding G vpdpbusd; then isum += s * the
// rows' scales, 16 bytes per group at sb[g] + scales_offset + 16 sub, int8
// (Q6_K) or uint8 (Q5_K), in int32 (exact).
template <int G, int C, int R, bool SignedScales>
[[gnu::always_inline]] inline void sub_block_chains(const __m512i* u, int sub, const uint8_t* const* sb, size_t scales_offset,
                                                    const block_q8_K* const* act, __m512i (&s)[G][C], __m512i (&isum)[G][C]) {
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
        __m512i w[G];
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) w[g] = _mm512_load_si512(u + g * kRegisters + R * sub + i);
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            const __m512i x = _mm512_set1_epi32(reinterpret_cast<const int32_t*>(act[c]->qs)[R * sub + i]);
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) s[g][c] = _mm512_dpbusd_epi32(s[g][c], w[g], x);
        }
    }
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[g] + scales_offset + 16 * sub));
        const __m512i scale = SignedScales ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) isum[g][c] = _mm512_add_epi32(isum[g][c], _mm512_mullo_epi32(s[g][c], scale));
    }
}

// Q6_K's Rows16 super-block (packing.h): ql as 32 registers, qh as 16, the
// 16 x 16 int8 scales, the 16 f16 d and padding.
struct Q6K {
    static constexpr size_t kQl = 2048, kQh = 1024, kScales = 256, kSuper = kQl + kQh + kScales + 64;
    static constexpr int kSubBlocks = 16;  // 16 values (4 registers) each, one int8 scale
    static constexpr int kGroups = 3, kTileCols = 4;  // register tile: 48 rows x 4 columns
    static_assert(kGroups <= kMaxGroups);

    // One group's super-block as 64 registers of unsigned 6-bit quants
    // u = q + 32 (register 4 sub + i: values 4i..4i+3 of sub-block sub, row
    // r in dword r), the bytes rows16_q6_k_run builds. For half n and dword
    // t, ql registers A (bytes 4t..) and B (32 + 4t..) and qh register H
    // give the quants of sub-blocks 8n + 2m + t / 4, m = 0..3: A's low
    // nibbles with H's bits 0-1, B's low nibbles with bits 2-3, A's high
    // nibbles with bits 4-5, B's high nibbles with bits 6-7. With H masked
    // to bits 0-1 and 4-5 (and H >> 2 likewise), a 16-bit shift by 4 moves
    // bits 0-1 to 4-5 and leaves 0 in bits 6-7; what it carries into the
    // next byte's low bits is replaced by the nibble, so each register is
    // one bit select: 11 vector instructions for 4 registers.
    static void unpack(const uint8_t* sb, __m512i* u) {
        const __m512i m4 = _mm512_set1_epi8(0x0F), m33 = _mm512_set1_epi8(0x33);
        // nibble where m4 is set, the other operand elsewhere
        const auto select = [&](__m512i nibble, __m512i high) { return _mm512_ternarylogic_epi32(nibble, high, m4, 0xE4); };
        for (int n = 0; n < 2; ++n) {
            #pragma GCC unroll 8
            for (int t = 0; t < 8; ++t) {
                const __m512i a = _mm512_loadu_si512(sb + 64 * (16 * n + t));
                const __m512i b = _mm512_loadu_si512(sb + 64 * (16 * n + 8 + t));
                const __m512i h = _mm512_loadu_si512(sb + kQl + 64 * (8 * n + t));
                const __m512i h02 = _mm512_and_si512(h, m33);                         // bits 0-1, 4-5
                const __m512i h13 = _mm512_and_si512(_mm512_srli_epi16(h, 2), m33);  // bits 2-3, 6-7
                const int first = 4 * (8 * n + t / 4) + t % 4;  // register of (sub-block 8n + t/4, i = t % 4)
                u[first + 0 * 8] = select(a, _mm512_slli_epi16(h02, 4));
                u[first + 1 * 8] = select(b, _mm512_slli_epi16(h13, 4));
                u[first + 2 * 8] = select(_mm512_srli_epi16(a, 4), h02);
                u[first + 3 * 8] = select(_mm512_srli_epi16(b, 4), h13);
            }
        }
    }

    // How panel_super_block runs a super-block: chains starting from
    // -32 * bsum (the offset of u), four vpdpbusd each, scaled by the rows'
    // int8 scales; then acc += isum * (d * da) as rows16_q6_k_run does.
    static constexpr int kSubRegisters = 4;
    static constexpr bool kChainsFromOffset = true, kSignedScales = true, kMins = false;
    static constexpr size_t kScalesAt = kQl + kQh, kDAt = kQl + kQh + kScales;
};

// Q5_K's Rows16 super-block (packing.h): Q4_K's 32 quant registers
// (register 8j + t: bytes 32j + 4t.. of each row's qs), the qh as 8
// registers, the unpacked 6-bit scales and mins (16 bytes per sub-block),
// then the 16 d and the 16 dmin as f16.
struct Q5K {
    static constexpr size_t kQuants = 2048, kHigh = 512, kScales = 256, kSuper = kQuants + kHigh + kScales + 64;
    static constexpr int kSubBlocks = 8;  // 32 values (8 registers) each, one 6-bit scale and min
    static constexpr int kGroups = 3, kTileCols = 4;  // register tile: 48 rows x 4 columns
    static_assert(kGroups <= kMaxGroups);

    // One group's super-block as 64 registers of 5-bit quants (register
    // 8 sub + r: values 4r..4r+3 of sub-block sub), the bytes
    // rows16_q4_k_run<true> builds: chunk j's register r gives the
    // low nibbles of sub-block 2j and the high ones of 2j + 1, each with the
    // bit 2j (or 2j + 1) of qh register r moved to bit 4.
    static void unpack(const uint8_t* sb, __m512i* u) {
        const __m512i low = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
        // nibbles | (moved & bit4)
        const auto join = [&](__m512i nibbles, __m512i moved) { return _mm512_ternarylogic_epi32(nibbles, moved, bit4, 0xF8); };
        #pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
            const __m512i h = _mm512_loadu_si512(sb + kQuants + 64 * r);
            // 16-bit shifts by at most 4 keep each byte's bit 4 in its byte.
            const __m512i at4[8] = {_mm512_slli_epi16(h, 4), _mm512_slli_epi16(h, 3), _mm512_slli_epi16(h, 2),
                                    _mm512_slli_epi16(h, 1), h,                       _mm512_srli_epi16(h, 1),
                                    _mm512_srli_epi16(h, 2), _mm512_srli_epi16(h, 3)};
            #pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
                const __m512i p = _mm512_loadu_si512(sb + 64 * (8 * j + r));
                u[8 * (2 * j) + r] = join(_mm512_and_si512(p, low), at4[2 * j]);
                u[8 * (2 * j + 1) + r] = join(_mm512_and_si512(_mm512_srli_epi16(p, 4), low), at4[2 * j + 1]);
            }
        }
    }

    // How panel_super_block runs a super-block: per sub-block, chains of 8
    // vpdpbusd from zero scaled by the rows' 6-bit scales into isum (int32,
    // exact), acc += isum * (d * da); then the mins' int32 sum, and
    // acc -= msum * (dmin * da) (subtract_k_mins), as rows16_q4_k_run does.
    static constexpr int kSubRegisters = 8;
    static constexpr bool kChainsFromOffset = false, kSignedScales = false, kMins = true;
    static constexpr size_t kScalesAt = kQuants + kHigh, kDAt = kQuants + kHigh + kScales;
};

// One super-block of G groups x C columns from the unpacked registers (F
// says how: Q6K, Q5K): per sub-block, chains of vpdpbusd (each column's
// broadcast activation dword feeding G of them) scaled by the rows' scales
// into isum (int32, exact); then the float steps.
template <class F, int G, int C>
void panel_super_block(const __m512i* u, const uint8_t* const (&sb)[kMaxGroups], const block_q8_K* const* act,
                       __m512 (*acc)[kPanelCols]) {
    // The chains' starts, -32 * bsum, as int32, for broadcast loads (not a
    // scalar load, shift and broadcast from a general register per
    // sub-block).
    [[maybe_unused]] alignas(64) int32_t starts[C][F::kSubBlocks];
    if constexpr (F::kChainsFromOffset) {
        static_assert(F::kSubBlocks == 16);
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            const __m512i bsums = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[c]->bsums)));
            _mm512_store_si512(starts[c], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(bsums, 5)));
        }
    }
    __m512i isum[G][C];
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) isum[g][c] = _mm512_setzero_si512();
    for (int sub = 0; sub < F::kSubBlocks; ++sub) {
        __m512i s[G][C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            __m512i start = _mm512_setzero_si512();
            if constexpr (F::kChainsFromOffset) start = _mm512_set1_epi32(starts[c][sub]);
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) s[g][c] = start;
        }
        sub_block_chains<G, C, F::kSubRegisters, F::kSignedScales>(u, sub, sb, F::kScalesAt, act, s, isum);
    }
    add_scaled_sums<G, C>(isum, sb, F::kDAt, act, acc);
    if constexpr (F::kMins) subtract_k_mins<G, C>(sb, F::kScalesAt, act, acc);
}

// The register tile of `cols` (1..C) columns.
template <class F, int G, int C>
void panel_super_block_cols(int cols, const __m512i* u, const uint8_t* const (&sb)[kMaxGroups], const block_q8_K* const* act,
                            __m512 (*acc)[kPanelCols]) {
    if constexpr (C > 1)
        if (cols < C) return panel_super_block_cols<F, G, C - 1>(cols, u, sb, act, acc);
    panel_super_block<F, G, C>(u, sb, act, acc);
}

// A panel of G groups: per super-block, the groups' quants unpacked (and
// the next super-block prefetched), then every register tile of columns.
template <class F, int G>
void panel_run(const Tile& t) {
    const int64_t nb = t.k / 256;
    alignas(64) __m512i u[kMaxGroups * kRegisters];
    alignas(64) __m512 acc[kMaxGroups][kPanelCols];
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < t.n_cols; ++c) acc[g][c] = _mm512_setzero_ps();
    const block_q8_K* act[kPanelCols];
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sb[kMaxGroups] = {};
        for (int g = 0; g < G; ++g) {
            sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * F::kSuper;
            if (b + 1 < nb)
                for (size_t line = 0; line < F::kSuper; line += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(sb[g] + F::kSuper + line), _MM_HINT_T0);
            F::unpack(sb[g], u + g * kRegisters);
        }
        for (int c = 0; c < t.n_cols; ++c)
            act[c] = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride) + b;
        for (int c = 0; c < t.n_cols; c += F::kTileCols) {
            // acc from column c on, still [group][kPanelCols].
            panel_super_block_cols<F, G, F::kTileCols>(t.n_cols - c < F::kTileCols ? t.n_cols - c : F::kTileCols, u, sb,
                                                       act + c, reinterpret_cast<__m512 (*)[kPanelCols]>(&acc[0][c]));
        }
    }
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < t.n_cols; ++c) store_group(t, g, c, acc[g][c]);
}

// As many groups as the tile's rows need (the last panel of a matrix may
// have fewer).
template <class F, int G>
void panel_groups(const Tile& t) {
    if constexpr (G > 1)
        if (t.n_rows <= kGroupRows * (G - 1)) return panel_groups<F, G - 1>(t);
    panel_run<F, G>(t);
}

template <class F>
void panel_tile(const Tile& t) {
    panel_groups<F, F::kGroups>(t);
}

}  // namespace

TypeKernel packed_avx512_k_panel_kernel(ElementType t) {
    switch (t) {
        case ElementType::Q5_K: return {panel_tile<Q5K>, Q5K::kGroups * kGroupRows, kPanelCols, ActivationFormat::Q8_K};
        case ElementType::Q6_K: return {panel_tile<Q6K>, Q6K::kGroups * kGroupRows, kPanelCols, ActivationFormat::Q8_K};
        default: return {};
    }
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
TypeKernel packed_avx512_k_panel_kernel(ElementType) { return {}; }
}  // namespace cria::matmul::detail

#endif
