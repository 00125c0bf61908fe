#pragma once
// The AMX kernels' block math in plain C++ (the emulated kernels use it):
// unpacking weight bytes into B tiles, and the integer and float steps that
// turn a block's int32 tile sums into outputs. The AVX-512 version
// (packed_kernels_amx.cpp) does the same operations in the same order, and
// both follow the VNNI kernels (packed_kernels_avx512.cpp), so the results
// are bit-identical.

#include <cstdint>
#include <cstring>

#include "cria/core/float16.h"
#include "matmul/scales.h"

namespace cria::matmul::detail {

struct ScalarBlockMath {
    static void prefetch(const uint8_t*) {}
    // The 16 rows' f16 scales as floats (exact).
    static void f16_scales(const uint8_t* p, float out[16]) {
        for (int r = 0; r < 16; ++r) {
            uint16_t h;
            std::memcpy(&h, p + 2 * r, 2);
            out[r] = f16_to_f32(h);
        }
    }
    // MXFP4: the 16 rows' E8M0 exponents as half their scale (the code
    // book holds doubled values), as the VNNI kernel reads them.
    static void e8m0_scales(const uint8_t* p, float out[16]) {
        for (int r = 0; r < 16; ++r) out[r] = e8m0_to_f32_half(p[r]);
    }
    // A B tile (8 rows of 64 bytes) from 4 Rows16 nibble registers:
    // rows 0..3 are the low nibbles of registers 0..3 (values 4j..4j+3),
    // rows 4..7 the high nibbles (values 16 + 4j..), through `table`.
    static void unpack_nibbles(const uint8_t* q, const uint8_t* table, uint8_t* out) {
        for (int j = 0; j < 4; ++j) {
            for (int i = 0; i < 64; ++i) {
                out[64 * j + i] = table[q[64 * j + i] & 0x0F];
                out[64 * (j + 4) + i] = table[q[64 * j + i] >> 4];
            }
        }
    }
    // acc[r] += float(c[r] - correction) * (dw[r] * da), as one fma.
    static void accumulate(const int32_t* c, int32_t correction, const float* dw, float da, float* acc) {
        for (int r = 0; r < 16; ++r)
            acc[r] = __builtin_fmaf(static_cast<float>(c[r] - correction), dw[r] * da, acc[r]);
    }

    // Q4_K: the B tiles of one 64-value chunk from its 8 Rows16 registers:
    // row t of `lo` = low nibbles of register t (sub-block 2j), of `hi` the
    // high nibbles (sub-block 2j + 1); values 0..15 as they are.
    static void unpack_q4_k_chunk(const uint8_t* q, uint8_t* lo, uint8_t* hi) {
        for (int i = 0; i < 512; ++i) {
            lo[i] = q[i] & 0x0F;
            hi[i] = q[i] >> 4;
        }
    }
    // Q6_K: the B tiles (4 x 64 bytes) of a super-block's 16 sub-blocks,
    // sub-block g at out + 256 g, of unsigned quants u = q + 32 (Rows16 Q6_K:
    // ql registers 0..31, qh registers 32..47). Sub-block g = 8n + 2m + h
    // holds values 128n + 32m + 16h..; its row i is register t = 4h + i:
    // the low (m < 2) or high nibble of ql register 16n + 8(m & 1) + t with
    // bits 2m, 2m + 1 of qh register 8n + t as bits 4, 5.
    static void unpack_q6_k(const uint8_t* sb, uint8_t* out) {
        for (int g = 0; g < 16; ++g) {
            const int n = g / 8, m = (g % 8) / 2, h = g % 2;
            for (int i = 0; i < 4; ++i) {
                const int t = 4 * h + i;
                const uint8_t* ql = sb + 64 * (16 * n + 8 * (m & 1) + t);
                const uint8_t* qh = sb + 2048 + 64 * (8 * n + t);
                for (int lane = 0; lane < 64; ++lane) {
                    const int low = m < 2 ? (ql[lane] & 0x0F) : (ql[lane] >> 4);
                    out[256 * g + 64 * i + lane] = static_cast<uint8_t>(low | (((qh[lane] >> (2 * m)) & 3) << 4));
                }
            }
        }
    }
    // Q6_K: isum[r] += (c[r] - correction) * scales[r] (int8 scales).
    static void scale_add_signed(const int32_t* c, int32_t correction, const uint8_t* scales, int32_t* isum) {
        for (int r = 0; r < 16; ++r) isum[r] += (c[r] - correction) * static_cast<int32_t>(static_cast<int8_t>(scales[r]));
    }
    // Q4_K: isum[r] += c[r] * scales[r] (a sub-block's 16 rows' 6-bit scales).
    static void scale_add(const int32_t* c, const uint8_t* scales, int32_t* isum) {
        for (int r = 0; r < 16; ++r) isum[r] += c[r] * static_cast<int32_t>(scales[r]);
    }
    // Q4_K: msum[r] += mins[r] * bsum (a sub-block's mins, its activation sum).
    static void mins_add(const uint8_t* mins, int32_t bsum, int32_t* msum) {
        for (int r = 0; r < 16; ++r) msum[r] += static_cast<int32_t>(mins[r]) * bsum;
    }
    // IQ4_XS per super-block: acc += (d * da) * isum, the multiply and the
    // add each rounded (the scalar reference's order). The product passes
    // through a volatile so that the compiler cannot fuse it with the add
    // into an fma (the emulation is for tests: speed does not matter).
    static void accumulate_rounded(const int32_t* isum, const float* d, float da, float* acc) {
        for (int r = 0; r < 16; ++r) {
            volatile float part = (d[r] * da) * static_cast<float>(isum[r]);
            acc[r] += part;
        }
    }
    // Q4_K per super-block: acc += isum * (d * da), then acc -= msum * (dmin * da),
    // each one fma (the VNNI kernel's fmadd, then fnmadd).
    static void accumulate_k(const int32_t* isum, const int32_t* msum, const float* d, const float* dmin, float da,
                             float* acc) {
        for (int r = 0; r < 16; ++r) {
            acc[r] = __builtin_fmaf(static_cast<float>(isum[r]), d[r] * da, acc[r]);
            acc[r] = __builtin_fmaf(-static_cast<float>(msum[r]), dmin[r] * da, acc[r]);
        }
    }
};

}  // namespace cria::matmul::detail
