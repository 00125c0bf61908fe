#pragma once
// The AMX kernel for Rows16-packed IQ4_XS (matmul/rows16_iq4_xs.h) times
// Q8_K activations, on the tile layout of amx_kernel.h (A: 16 tokens x 32
// activation quants, B: 8 x 64 weight bytes per group of 16 rows, C: 2 x 2
// int32 tiles; 32 rows x 32 tokens per call).
//
// Per super-block and 32-value sub-block s, one TDPBSUD gives the tokens' x
// rows' sums of s with the weights as u = q + 128 (B: Rows16's registers
// 4s..4s+3 through the code book + 128, low nibbles then high: already
// AMX's B layout, as for IQ4_NL). The offset comes out as 128 x the
// sub-block's activation sum (from Q8_K's bsums), each sum is scaled by its
// row's ls - 32 and added up in int32, and d comes in once per super-block:
// (d x d_act) x isum, then added, each rounded. These are the VNNI kernel's
// operations (packed_kernels_iq4_xs_avx512.cpp: exact integers, same float
// steps), so the results are bit-identical to it and to the scalar reference.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cria/quant/blocks.h"
#include "matmul/amx_block_math.h"
#include "matmul/amx_kernel.h"
#include "matmul/amx_tiles.h"
#include "matmul/code_tables.h"
#include "matmul/kernels.h"
#include "matmul/rows16_iq4_xs.h"

namespace cria::matmul::detail {

template <class Tiles, class Math>
struct AmxIq4Xs {
    static void run(const Tile& t) {
        using cria::quant::block_q8_K;
        const int64_t nb = t.k / 256;
        const int groups = t.n_rows > 16 ? 2 : 1;
        const int tokens[2] = {std::min(16, t.n_cols), std::max(0, t.n_cols - 16)};
        Tiles tiles;
        tiles.configure(amx_config_2x2(tokens, groups));

        alignas(64) float acc[2][32][16] = {};  // [group][token][row]
        alignas(64) int32_t c[4][16][16];
        alignas(64) uint8_t unpacked[2][512];  // [group]: one sub-block's B tile
        alignas(64) float d[2][16];
        for (int64_t b = 0; b < nb; ++b) {
            alignas(64) int32_t isum[2][32][16] = {};
            const uint8_t* sb[2];
            for (int g = 0; g < groups; ++g) sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * kIq4XsSuper;
            for (int s = 0; s < 8; ++s) {
                for (int g = 0; g < groups; ++g) {
                    Math::prefetch(sb[g] + 256 * s);
                    Math::unpack_nibbles(sb[g] + 256 * s, kCodeTables.iq4nl, unpacked[g]);
                }
                tiles.template load<6>(unpacked[0], 64);
                if (groups == 2) tiles.template load<7>(unpacked[1], 64);
                const size_t qs = static_cast<size_t>(b) * sizeof(block_q8_K) + offsetof(block_q8_K, qs) + 32 * s;
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
                        const auto* act = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(token) * t.a_stride) + b;
                        const int32_t correction = 128 * (act->bsums[2 * s] + act->bsums[2 * s + 1]);
                        for (int g = 0; g < groups; ++g)
                            Math::scale_add_signed(c[2 * i + g][m], correction, sb[g] + kIq4XsQuants + 16 * s, isum[g][token]);
                    }
            }
            for (int g = 0; g < groups; ++g) Math::f16_scales(sb[g] + kIq4XsD, d[g]);
            for (int token = 0; token < t.n_cols; ++token) {
                const auto* act = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(token) * t.a_stride) + b;
                for (int g = 0; g < groups; ++g) Math::accumulate_rounded(isum[g][token], d[g], act->d, acc[g][token]);
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
