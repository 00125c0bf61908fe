#pragma once
// The AMX kernel for Rows16-packed Q6_K times Q8_K activations, on the tile
// layout of amx_kernel.h with 16-value blocks: A = 16 tokens x 16 activation
// quants, B = 4 x 64 bytes per group of 16 rows (Rows16's registers of one
// sub-block, unpacked to the unsigned quants q + 32), C = 2 x 2 int32 tiles;
// 32 rows x 32 tokens per call.
//
// Per super-block and 16-value sub-block g, one TDPBSUD gives sum a * (q + 32);
// subtracting 32 * (the block sum bsums[g]) leaves the exact integer sum,
// which is scaled by the rows' int8 scales and added up in int32; d comes in
// once per super-block with one fma. These are the VNNI kernel's operations
// (rows16_q6_k_run: exact integers, then the same float step), so results are
// bit-identical to it.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cria/quant/blocks.h"
#include "matmul/amx_block_math.h"
#include "matmul/amx_kernel.h"
#include "matmul/amx_tiles.h"
#include "matmul/kernels.h"

namespace cria::matmul::detail {

template <class Tiles, class Math>
struct AmxQ6K {
    // Rows16 Q6_K super-block run (packing.cpp): ql, qh, int8 scales, d, padding.
    static constexpr size_t kQl = 2048, kQh = 1024, kScales = 256, kSuper = kQl + kQh + kScales + 64;

    static void run(const Tile& t) {
        using cria::quant::block_q8_K;
        const int64_t nb = t.k / 256;
        const int groups = t.n_rows > 16 ? 2 : 1;
        const int tokens[2] = {std::min(16, t.n_cols), std::max(0, t.n_cols - 16)};
        Tiles tiles;
        tiles.configure(amx_config_2x2(tokens, groups, 16));

        alignas(64) float acc[2][32][16] = {};  // [group][token][row]
        alignas(64) int32_t c[4][16][16];
        alignas(64) uint8_t unpacked[2][16 * 256];  // [group][sub-block's B tile]
        alignas(64) float d[2][16];
        for (int64_t b = 0; b < nb; ++b) {
            alignas(64) int32_t isum[2][32][16] = {};
            const uint8_t* sb[2];
            for (int g = 0; g < groups; ++g) {
                sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * kSuper;
                Math::prefetch(sb[g]);
                Math::unpack_q6_k(sb[g], unpacked[g]);
                Math::f16_scales(sb[g] + kQl + kQh + kScales, d[g]);
            }
            for (int sub = 0; sub < 16; ++sub) {
                tiles.template load<6>(unpacked[0] + 256 * sub, 64);
                if (groups == 2) tiles.template load<7>(unpacked[1] + 256 * sub, 64);
                const size_t qs = static_cast<size_t>(b) * sizeof(block_q8_K) + offsetof(block_q8_K, qs) + 16 * sub;
                if (tokens[0] > 0) {
                    tiles.template zero<0>();
                    tiles.template load<4>(t.a + qs, t.a_stride);
                    tiles.template dp_signed_unsigned<0, 4, 6>();
                    tiles.template store<0>(c[0], 64);
                    if (groups == 2) {
                        tiles.template zero<1>();
                        tiles.template dp_signed_unsigned<1, 4, 7>();
                        tiles.template store<1>(c[1], 64);
                    }
                }
                if (tokens[1] > 0) {
                    tiles.template zero<2>();
                    tiles.template load<5>(t.a + 16 * t.a_stride + qs, t.a_stride);
                    tiles.template dp_signed_unsigned<2, 5, 6>();
                    tiles.template store<2>(c[2], 64);
                    if (groups == 2) {
                        tiles.template zero<3>();
                        tiles.template dp_signed_unsigned<3, 5, 7>();
                        tiles.template store<3>(c[3], 64);
                    }
                }
                for (int i = 0; i < 2; ++i)
                    for (int m = 0; m < tokens[i]; ++m) {
                        const int token = 16 * i + m;
                        const auto* act =
                            reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(token) * t.a_stride) + b;
                        for (int g = 0; g < groups; ++g)
                            Math::scale_add_signed(c[2 * i + g][m], 32 * act->bsums[sub], sb[g] + kQl + kQh + 16 * sub,
                                                   isum[g][token]);
                    }
            }
            for (int token = 0; token < t.n_cols; ++token) {
                const auto* act = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(token) * t.a_stride) + b;
                for (int g = 0; g < groups; ++g) Math::accumulate(isum[g][token], 0, d[g], act->d, acc[g][token]);
            }
        }
        tiles.release();
        for (int token = 0; token < t.n_cols; ++token) {
            float* y = t.y + static_cast<size_t>(token) * t.y_stride;
            for (int r = 0; r < t.n_rows; ++r) y[r] = acc[r / 16][token][r % 16];
        }
    }
};

}  // namespace cria::matmul::detail
