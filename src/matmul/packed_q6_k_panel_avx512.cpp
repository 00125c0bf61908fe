// Q6_K (Rows16) times Q8_K activations for products of many columns, a
// panel of 48 rows and up to 64 columns per call.
//
// The 6-bit quants of a Q6_K super-block are split over ql (low nibbles)
// and qh (2 bits each); joining them costs about as many vector
// instructions as the vpdpbusd that use them when a register tile of 5
// columns unpacks them for itself (groups_q6_k_run, the kernel before this
// one, removed). Here each super-block of the panel's 48 rows is unpacked once into
// a 12 KiB buffer of ready bytes (64 registers per 16 rows), which the
// register tiles of all the call's columns then load as they are: the
// unpacking is shared by up to 64 columns instead of 5, and the inner loop
// is loads, broadcasts, vpdpbusd and the per-sub-block scaling only.
//
// Register tiles of 48 rows x 4 columns: each broadcast activation dword
// feeds 3 vpdpbusd, 12 chains cover the instruction's latency, and 64
// columns are 16 whole tiles. CPU ms, one thread, 4 interleaved rounds
// (bench_matmul_mat matmat512/q6_K/.../packed/1, loaded machine):
// 2048x2048: 32 x 4 7.38-8.24, 32 x 5 7.69-8.67, 48 x 4 7.47-8.63;
// 8192x2048: 32 x 4 31.3-39.1, 32 x 5 32.9-36.3, 48 x 4 29.8-32.0
// (32 x 6 and 48 x 3 were slower in a first round).
//
// Per row and column the integer sums are exact (whatever their order) and
// the float steps per super-block are rows16_q6_k_run's (fmadd of the int32
// sum with d * da), so a row's result is bit for bit that of the other
// Q6_K kernels.

#include <cstdint>
#include <cstring>

#include "cria/quant/blocks.h"
#include "matmul/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace cria::matmul::detail {
namespace {

using cria::quant::block_q8_K;

constexpr int kGroupRows = 16;
constexpr int kGroups = 3;                      // rows per panel: 48
constexpr int kPanelCols = 64;                  // columns per call (the driver's column task)
constexpr int kTileCols = 4;                    // columns per register tile
constexpr int kSubBlocks = 16;                  // 16 values each, one int8 scale
constexpr int kRegisters = 4 * kSubBlocks;      // 64 bytes: 4 values of 16 rows
// Rows16 Q6_K super-block (packing.h): ql as 32 registers, qh as 16, the
// 16 x 16 int8 scales, the 16 f16 d and padding.
constexpr size_t kQl = 2048, kQh = 1024, kScales = 256, kSuper = kQl + kQh + kScales + 64;
constexpr size_t kSuperLines = kSuper / 64;

// One group's super-block as 64 registers of unsigned 6-bit quants
// u = q + 32 (register 4 sub + i: values 4i..4i+3 of sub-block sub, row r in
// dword r), the bytes rows16_q6_k_run builds. For half n and dword t,
// ql registers A (bytes 4t..) and B (32 + 4t..) and qh register H give the
// quants of sub-blocks 8n + 2m + t / 4, m = 0..3: A's low nibbles with
// H's bits 0-1, B's low nibbles with bits 2-3, A's high nibbles with bits
// 4-5, B's high nibbles with bits 6-7. With H masked to bits 0-1 and 4-5
// (and H >> 2 likewise), a 16-bit shift by 4 moves bits 0-1 to 4-5 and
// leaves 0 in bits 6-7; what it carries into the next byte's low bits is
// replaced by the nibble, so each register is one bit select: 11 vector
// instructions for 4 registers.
inline void unpack_q6_k(const uint8_t* sb, __m512i* u) {
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

// One super-block of G groups x C columns from the unpacked registers:
// per sub-block, chains starting from -32 * bsum (the offset of u), four
// vpdpbusd each, each column's broadcast activation dword feeding G of
// them; the chains scaled by the rows' int8 scales into isum (int32,
// exact); then acc += isum * (d * da) as rows16_q6_k_run does.
template <int G, int C>
void panel_super_block(const __m512i* u, const uint8_t* const (&sb)[kGroups], const block_q8_K* const* act,
                       const int32_t (*starts)[kSubBlocks], __m512 (*acc)[kPanelCols]) {
    __m512i isum[G][C];
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g)
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) isum[g][c] = _mm512_setzero_si512();
    for (int sub = 0; sub < kSubBlocks; ++sub) {
        __m512i s[G][C];
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            const __m512i start = _mm512_set1_epi32(starts[c][sub]);
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) s[g][c] = start;
        }
        #pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
            __m512i w[G];
            #pragma GCC unroll 16
            for (int g = 0; g < G; ++g) w[g] = _mm512_load_si512(u + g * kRegisters + 4 * sub + i);
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) {
                const __m512i x = _mm512_set1_epi32(reinterpret_cast<const int32_t*>(act[c]->qs)[4 * sub + i]);
                #pragma GCC unroll 16
                for (int g = 0; g < G; ++g) s[g][c] = _mm512_dpbusd_epi32(s[g][c], w[g], x);
            }
        }
        #pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            const __m512i scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[g] + kQl + kQh + 16 * sub)));
            #pragma GCC unroll 16
            for (int c = 0; c < C; ++c) isum[g][c] = _mm512_add_epi32(isum[g][c], _mm512_mullo_epi32(s[g][c], scale));
        }
    }
    #pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb[g] + kQl + kQh + kScales)));
        #pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[g][c]), _mm512_mul_ps(d, _mm512_set1_ps(act[c]->d)), acc[g][c]);
    }
}

template <int G>
void panel_super_block_cols(int cols, const __m512i* u, const uint8_t* const (&sb)[kGroups], const block_q8_K* const* act,
                            const int32_t (*starts)[kSubBlocks], __m512 (*acc)[kPanelCols]) {
    static_assert(kTileCols == 4, "the cases below are the tile widths up to kTileCols");
    switch (cols) {
        case 1: return panel_super_block<G, 1>(u, sb, act, starts, acc);
        case 2: return panel_super_block<G, 2>(u, sb, act, starts, acc);
        case 3: return panel_super_block<G, 3>(u, sb, act, starts, acc);
        default: return panel_super_block<G, kTileCols>(u, sb, act, starts, acc);
    }
}


template <int G>
void q6_k_panel_run(const Tile& t) {
    const int64_t nb = t.k / 256;
    alignas(64) __m512i u[kGroups * kRegisters];
    alignas(64) __m512 acc[kGroups][kPanelCols];
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < t.n_cols; ++c) acc[g][c] = _mm512_setzero_ps();
    const block_q8_K* act[kPanelCols];
    alignas(64) int32_t starts[kPanelCols][kSubBlocks];
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sb[kGroups] = {};
        for (int g = 0; g < G; ++g) {
            sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * kSuper;
            // The next super-block of the group, while this one is unpacked.
            if (b + 1 < nb)
                for (size_t line = 0; line < kSuperLines; ++line)
                    _mm_prefetch(reinterpret_cast<const char*>(sb[g] + kSuper + 64 * line), _MM_HINT_T0);
            unpack_q6_k(sb[g], u + g * kRegisters);
        }
        // Each column's chain starts, -32 * bsum per sub-block, as int32
        // for broadcast loads (not a scalar load, shift and a broadcast from
        // a general register per sub-block, column and tile).
        for (int c = 0; c < t.n_cols; ++c) {
            act[c] = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride) + b;
            const __m512i bsums = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[c]->bsums)));
            _mm512_store_si512(starts[c], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(bsums, 5)));
        }
        for (int c = 0; c < t.n_cols; c += kTileCols) {
            // acc from column c on, still [group][kPanelCols].
            panel_super_block_cols<G>(t.n_cols - c < kTileCols ? t.n_cols - c : kTileCols, u, sb, act + c, starts + c,
                                      reinterpret_cast<__m512 (*)[kPanelCols]>(&acc[0][c]));
        }
    }
    for (int g = 0; g < G; ++g) {
        const int rows = t.n_rows - kGroupRows * g < kGroupRows ? t.n_rows - kGroupRows * g : kGroupRows;
        const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1);
        for (int c = 0; c < t.n_cols; ++c)
            _mm512_mask_storeu_ps(t.y + static_cast<size_t>(c) * t.y_stride + kGroupRows * g, mask, acc[g][c]);
    }
}

// As many groups as the tile's rows need (the last panel of a matrix may
// have fewer).
template <int G>
void q6_k_panel_groups(const Tile& t) {
    if constexpr (G > 1)
        if (t.n_rows <= kGroupRows * (G - 1)) return q6_k_panel_groups<G - 1>(t);
    q6_k_panel_run<G>(t);
}

void q6_k_panel_tile(const Tile& t) { q6_k_panel_groups<kGroups>(t); }

}  // namespace

TypeKernel packed_avx512_q6_k_panel_kernel() {
    return {q6_k_panel_tile, kGroups * kGroupRows, kPanelCols, ActivationFormat::Q8_K};
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

namespace cria::matmul::detail {
TypeKernel packed_avx512_q6_k_panel_kernel() { return {}; }
}  // namespace cria::matmul::detail

#endif
