#pragma once
// The AMX kernel for Rows16-packed Q4_K times Q8_K activations, on the same
// tile layout as amx_kernel.h (A: 16 tokens x 32 activation quants, B: 8 x 64
// weight bytes per group of 16 rows, C: 2 x 2 int32 tiles; 32 rows x 32
// tokens per call).
//
// Per super-block of 256 values and 32-value sub-block s, one TDPBSUD gives
// the tokens' x rows' integer sums of s (B: the unsigned nibbles 0..15 of
// Rows16's registers 8(s/2)..+7, low for even s, high for odd: already
// AMX's B layout once unpacked to bytes). Each sum is scaled by its row's
// 6-bit scale and added up in int32; the mins meet the Q8_K block sums in
// int32; d and dmin come in once per super-block in float. These are the
// VNNI kernel's operations in its order (rows16_q4_k_run: the integer parts
// are exact whatever their order, the float part is the same two fmas), so
// the results are bit-identical to it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cria/quant/blocks.h"
#include "matmul/amx_block_math.h"
#include "matmul/amx_kernel.h"
#include "matmul/amx_tiles.h"
#include "matmul/kernels.h"

namespace cria::matmul::detail {

template <class Tiles, class Math>
struct AmxQ4K {
    // Rows16 Q4_K super-block run (packing.cpp): quants, scales, mins, d, dmin.
    static constexpr size_t kQuants = 2048, kScales = 256, kSuper = kQuants + kScales + 64;

    static void run(const Tile& t) {
        using cria::quant::block_q8_K;
        const int64_t nb = t.k / 256;
        const int groups = t.n_rows > 16 ? 2 : 1;
        const int tokens[2] = {std::min(16, t.n_cols), std::max(0, t.n_cols - 16)};
        Tiles tiles;
        tiles.configure(amx_config_2x2(tokens, groups));

        alignas(64) float acc[2][32][16] = {};  // [group][token][row]
        alignas(64) int32_t c[4][16][16];
        alignas(64) uint8_t unpacked[2][2][512];  // [group][low, high]
        alignas(64) float d[2][16], dmin[2][16];
        for (int64_t b = 0; b < nb; ++b) {
            alignas(64) int32_t isum[2][32][16] = {}, msum[2][32][16] = {};
            const uint8_t* sb[2];
            for (int g = 0; g < groups; ++g) sb[g] = t.w + static_cast<size_t>(g) * t.w_stride + static_cast<size_t>(b) * kSuper;
            for (int j = 0; j < 4; ++j) {  // 64-value chunk j: sub-blocks 2j, 2j + 1
                for (int g = 0; g < groups; ++g) {
                    Math::prefetch(sb[g] + 512 * j);
                    Math::unpack_q4_k_chunk(sb[g] + 512 * j, unpacked[g][0], unpacked[g][1]);
                }
                for (int h = 0; h < 2; ++h) {
                    const int s = 2 * j + h;
                    tiles.template load<6>(unpacked[0][h], 64);
                    if (groups == 2) tiles.template load<7>(unpacked[1][h], 64);
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
                        for (int m = 0; m < tokens[i]; ++m)
                            for (int g = 0; g < groups; ++g)
                                Math::scale_add(c[2 * i + g][m], sb[g] + kQuants + 16 * s, isum[g][16 * i + m]);
                }
            }
            for (int g = 0; g < groups; ++g) {
                Math::f16_scales(sb[g] + kQuants + kScales, d[g]);
                Math::f16_scales(sb[g] + kQuants + kScales + 32, dmin[g]);
            }
            for (int token = 0; token < t.n_cols; ++token) {
                const auto* act = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(token) * t.a_stride) + b;
                for (int g = 0; g < groups; ++g) {
                    for (int sub = 0; sub < 8; ++sub)
                        Math::mins_add(sb[g] + kQuants + 128 + 16 * sub, act->bsums[2 * sub] + act->bsums[2 * sub + 1],
                                       msum[g][token]);
                    Math::accumulate_k(isum[g][token], msum[g][token], d[g], dmin[g], act->d, acc[g][token]);
                }
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
