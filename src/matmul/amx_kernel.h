#pragma once
// The AMX kernel for Rows16-packed 32-value block types (Q8_0, Q4_0,
// IQ4_NL, MXFP4) times Q8_0Planar activations, written once against a tile policy
// (amx_tiles.h: the hardware instructions or their emulation) and a block
// math policy (the byte unpacking and float part: AVX-512 or scalar).
//
// One tile call covers up to 32 weight rows (two Rows16 groups, w_stride
// apart) and up to 32 activation columns (tokens). Per 32-value block b:
//   A0, A1 (tiles 4, 5): tokens 0..15 and 16..31, 32 quant bytes each,
//       loaded straight from the activation rows (Q8_0Planar keeps a
//       block's 32 quants together, a_stride apart per token);
//   B0, B1 (tiles 6, 7): the two groups' weights, 8 rows x 64 bytes. Rows16
//       already stores register j = row r's bytes 4j..4j+3 at 4r, which is
//       AMX's B layout B[k/4][n*4 + k%4]: Q8_0's packed block is loaded as
//       it is; the nibble types are first unpacked to one byte each;
//   C (tiles 0..3): C[2i + g] = tokens of A_i x rows of group g, int32.
// The weights are unsigned (value + 128, as the VNNI kernels keep them), so
// one TDPBSUD gives sum a * (w + 128); subtracting 128 * (the block's
// activation sum) leaves the exact integer dot product. That integer is
// then converted and scaled exactly as the VNNI kernels do (float(dot),
// then fma(dot, d_w * d_a, acc), blocks in order), so every result is
// bit-identical to packed_kernels_avx512.cpp's and does not depend on which
// kernel computed it.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "matmul/amx_block_math.h"
#include "matmul/amx_tiles.h"
#include "matmul/code_tables.h"
#include "matmul/kernels.h"

namespace cria::matmul::detail {

// The weight formats: quant bytes of one block of 16 rows, the nibble code
// table (value + 128) of the 4-bit types (nullptr: bytes as stored), and
// the scale bytes of 16 rows (f16 each; MXFP4: one E8M0 exponent each).
struct AmxQ8_0 {
    static constexpr size_t kQuantBytes = 32 * 16, kScaleBytes = 32;
    static constexpr const uint8_t* kTable = nullptr;
};
struct AmxQ4_0 {
    static constexpr size_t kQuantBytes = 16 * 16, kScaleBytes = 32;
    static constexpr const uint8_t* kTable = kCodeTables.q4_0;
};
struct AmxIq4Nl {
    static constexpr size_t kQuantBytes = 16 * 16, kScaleBytes = 32;
    static constexpr const uint8_t* kTable = kCodeTables.iq4nl;
};
struct AmxMxfp4 {
    static constexpr size_t kQuantBytes = 16 * 16, kScaleBytes = 16;
    static constexpr const uint8_t* kTable = kCodeTables.mxfp4;
};

// Every weight byte is its value + 128 (Q8_0's packing flips the sign bit;
// the code tables add 128).
inline constexpr int32_t kAmxWeightOffset = 128;

// The configuration of the kernels' tiles: C[2i + g] (0..3) = tokens of
// A_i x rows of group g, int32; A_i (4, 5) = tokens x k_bytes (the block's
// activation quants); B_g (6, 7) = k_bytes / 4 x 64 bytes. Only the tiles a
// call uses are configured: A_i and C have as many rows as there are
// tokens, so no load reads past the columns.
// static: each file gets its own copy, compiled for that file's target.
static inline TileConfig amx_config_2x2(const int tokens[2], int groups, int k_bytes = 32) {
    TileConfig cfg;
    for (int i = 0; i < 2; ++i) {
        if (tokens[i] == 0) continue;
        cfg.set(4 + i, tokens[i], k_bytes);
        for (int g = 0; g < groups; ++g) cfg.set(2 * i + g, tokens[i], 64);
    }
    for (int g = 0; g < groups; ++g) cfg.set(6 + g, k_bytes / 4, 64);
    return cfg;
}

template <class Tiles, class Math, class W>
struct AmxBlocks32 {
    static constexpr int kMaxRows = 32;
    static constexpr int kMaxCols = 32;

    static void run(const Tile& t) {
        const int64_t nb = t.k / 32;
        const size_t scale_off = q8_0_planar_scale_offset(t.k), sum_off = q8_0_planar_sum_offset(t.k);
        const int groups = t.n_rows > 16 ? 2 : 1;
        const int tokens[2] = {std::min(16, t.n_cols), std::max(0, t.n_cols - 16)};

        const TileConfig cfg = amx_config_2x2(tokens, groups);
        Tiles tiles;
        tiles.configure(cfg);

        alignas(64) float acc[2][kMaxCols][16] = {};  // [group][token][row]
        alignas(64) int32_t c[4][16][16];
        alignas(64) uint8_t unpacked[2][W::kQuantBytes == 512 ? 1 : 512];
        alignas(64) float dw[2][16];
        for (int64_t b = 0; b < nb; ++b) {
            if (tokens[0] > 0) zero_c<0>(tiles, groups);
            if (tokens[1] > 0) zero_c<2>(tiles, groups);
            for (int g = 0; g < groups; ++g) {
                const uint8_t* w = t.w + static_cast<size_t>(g) * t.w_stride;
                const uint8_t* q = w + rows16_quants_offset(b, W::kQuantBytes, W::kScaleBytes);
                Math::prefetch(q);
                const uint8_t* bytes = q;
                if constexpr (W::kQuantBytes != 512) {
                    Math::unpack_nibbles(q, W::kTable, unpacked[g]);
                    bytes = unpacked[g];
                }
                if (g == 0) tiles.template load<6>(bytes, 64);
                else tiles.template load<7>(bytes, 64);
                const uint8_t* scales = w + rows16_scales_offset(b, nb, W::kQuantBytes, W::kScaleBytes);
                if constexpr (W::kScaleBytes == 16) Math::e8m0_scales(scales, dw[g]);
                else Math::f16_scales(scales, dw[g]);
            }
            if (tokens[0] > 0) {
                tiles.template load<4>(t.a + 32 * b, t.a_stride);
                tiles.template dp_signed_unsigned<0, 4, 6>();
                if (groups == 2) tiles.template dp_signed_unsigned<1, 4, 7>();
            }
            if (tokens[1] > 0) {
                tiles.template load<5>(t.a + 16 * t.a_stride + 32 * b, t.a_stride);
                tiles.template dp_signed_unsigned<2, 5, 6>();
                if (groups == 2) tiles.template dp_signed_unsigned<3, 5, 7>();
            }
            if (tokens[0] > 0) {
                tiles.template store<0>(c[0], 64);
                if (groups == 2) tiles.template store<1>(c[1], 64);
            }
            if (tokens[1] > 0) {
                tiles.template store<2>(c[2], 64);
                if (groups == 2) tiles.template store<3>(c[3], 64);
            }
            for (int i = 0; i < 2; ++i) {
                for (int m = 0; m < tokens[i]; ++m) {
                    const int token = 16 * i + m;
                    const uint8_t* act = t.a + static_cast<size_t>(token) * t.a_stride;
                    float da;
                    int32_t sum;
                    std::memcpy(&da, act + scale_off + 4 * static_cast<size_t>(b), 4);
                    std::memcpy(&sum, act + sum_off + 4 * static_cast<size_t>(b), 4);
                    for (int g = 0; g < groups; ++g)
                        Math::accumulate(c[2 * i + g][m], kAmxWeightOffset * sum, dw[g], da, acc[g][token]);
                }
            }
        }
        tiles.release();
        for (int token = 0; token < t.n_cols; ++token) {
            float* y = t.y + static_cast<size_t>(token) * t.y_stride;
            for (int r = 0; r < t.n_rows; ++r) y[r] = acc[r / 16][token][r % 16];
        }
    }

private:
    template <int First>
    static void zero_c(Tiles& tiles, int groups) {
        tiles.template zero<First>();
        if (groups == 2) tiles.template zero<First + 1>();
    }
};

}  // namespace cria::matmul::detail
