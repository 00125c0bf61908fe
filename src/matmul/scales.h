#pragma once
// Scalar decoding of weight blocks into small signed integers plus scales.
// Shared by the reference kernels and by the SIMD kernels' slow paths.
// The layouts are ggml's (ggml-common.h); values are returned in the order in
// which they multiply the activations.

#include <bit>
#include <cstdint>
#include <cstring>

#include "cria/core/float16.h"
#include "cria/quant/blocks.h"

namespace cria::matmul::detail {

using namespace cria::quant;

// ---- 32-value blocks ------------------------------------------------------------
inline void decode_q4_0(const block_q4_0& b, int8_t* q) {
    for (int j = 0; j < 16; ++j) {
        q[j] = static_cast<int8_t>((b.qs[j] & 0x0F) - 8);
        q[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
    }
}
inline void decode_q4_1(const block_q4_1& b, int8_t* q) {
    for (int j = 0; j < 16; ++j) {
        q[j] = static_cast<int8_t>(b.qs[j] & 0x0F);
        q[j + 16] = static_cast<int8_t>(b.qs[j] >> 4);
    }
}
inline uint32_t high_bits(const uint8_t* qh) {
    uint32_t v;
    std::memcpy(&v, qh, sizeof v);
    return v;
}
inline void decode_q5_0(const block_q5_0& b, int8_t* q) {
    const uint32_t qh = high_bits(b.qh);
    for (int j = 0; j < 16; ++j) {
        q[j] = static_cast<int8_t>(((b.qs[j] & 0x0F) | (((qh >> j) & 1) << 4)) - 16);
        q[j + 16] = static_cast<int8_t>(((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16);
    }
}
inline void decode_q5_1(const block_q5_1& b, int8_t* q) {
    const uint32_t qh = high_bits(b.qh);
    for (int j = 0; j < 16; ++j) {
        q[j] = static_cast<int8_t>((b.qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
        q[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
}
inline void decode_q8_0(const block_q8_0& b, int8_t* q) { std::memcpy(q, b.qs, 32); }
inline void decode_iq4_nl(const block_iq4_nl& b, int8_t* q) {
    for (int j = 0; j < 16; ++j) {
        q[j] = kvalues_iq4nl[b.qs[j] & 0x0F];
        q[j + 16] = kvalues_iq4nl[b.qs[j] >> 4];
    }
}
inline void decode_mxfp4(const block_mxfp4& b, int8_t* q) {
    for (int j = 0; j < 16; ++j) {
        q[j] = kvalues_mxfp4[b.qs[j] & 0x0F];
        q[j + 16] = kvalues_mxfp4[b.qs[j] >> 4];
    }
}

// E8M0 exponent e as the float 2^(e-128): half the block scale, because the
// MXFP4 code book holds doubled E2M1 values (as ggml's E8M0_TO_FP32_HALF).
inline float e8m0_to_f32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    return std::bit_cast<float>(bits);
}

template <typename Block>
inline float block_scale(const Block& b) { return f16_to_f32(b.d); }
template <>
inline float block_scale<block_mxfp4>(const block_mxfp4& b) { return e8m0_to_f32_half(b.e); }

// ---- 256-value super-blocks --------------------------------------------------------
// value = d * scale[g] * q - dmin * min[g] for value i in group g = i / 16.
struct SuperBlock {
    int8_t q[QK_K];
    int16_t scale[16];
    int16_t min[16];
    float d;
    float dmin;
};

// One super-block's share of a dot product with Q8_K activations, as ggml's
// reference computes it: exact integer sums per 16 values, scales and mins in
// int, then d and dmin in float.
inline float superblock_dot(const SuperBlock& sb, const block_q8_K& y) {
    int isum = 0, imin = 0;
    for (int g = 0; g < 16; ++g) {
        int gsum = 0;
        for (int j = 0; j < 16; ++j) gsum += sb.q[g * 16 + j] * y.qs[g * 16 + j];
        isum += sb.scale[g] * gsum;
        imin += sb.min[g] * y.bsums[g];
    }
    return sb.d * y.d * static_cast<float>(isum) - sb.dmin * y.d * static_cast<float>(imin);
}

// The 6-bit scale and min of sub-block j (0..7) of Q4_K/Q5_K.
inline void scale_min_k4(int j, const uint8_t* s, int& sc, int& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// All 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of Q4_K/Q5_K at once, by
// word-wide bit moves (the same as scale_min_k4 for j = 0..7).
inline void scales_mins_k4_words(const uint8_t* packed, uint32_t u[4]) {
    constexpr uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    std::memcpy(u, packed, 12);
    u[3] = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
    const uint32_t mins_low = u[1] & low6;
    u[1] = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
    u[2] = mins_low;
    u[0] &= low6;
}
inline void scales_mins_k4(const uint8_t* packed, uint8_t out[16]) {
    uint32_t u[4];
    scales_mins_k4_words(packed, u);
    std::memcpy(out, u, 16);
}

// The 16 signed 6-bit scales of Q3_K (stored biased by 32 in 12 bytes: low 4
// bits of scales 0..7 and 8..15 in bytes 0..7, the top 2 bits of all 16 in
// bytes 8..11), unpacked word-wide.
// As 16 bytes, still biased by 32.
inline void q3_k_scale_words(const uint8_t* packed, uint32_t u[4]) {
    constexpr uint32_t low4 = 0x0f0f0f0f, low2 = 0x03030303;
    uint32_t w[3];
    std::memcpy(w, packed, 12);
    u[0] = (w[0] & low4) | (((w[2] >> 0) & low2) << 4);
    u[1] = (w[1] & low4) | (((w[2] >> 2) & low2) << 4);
    u[2] = ((w[0] >> 4) & low4) | (((w[2] >> 4) & low2) << 4);
    u[3] = ((w[1] >> 4) & low4) | (((w[2] >> 6) & low2) << 4);
}
inline void q3_k_scales(const uint8_t* packed, int16_t* out) {
    uint32_t u[4];
    q3_k_scale_words(packed, u);
    uint8_t bytes[16];
    std::memcpy(bytes, u, 16);
    for (int j = 0; j < 16; ++j) out[j] = static_cast<int16_t>(bytes[j] - 32);
}

inline void decode_superblock(const block_q2_K& b, SuperBlock& s) {
    for (int n = 0; n < 2; ++n)
        for (int shift = 0; shift < 4; ++shift)
            for (int l = 0; l < 32; ++l)
                s.q[n * 128 + shift * 32 + l] = static_cast<int8_t>((b.qs[n * 32 + l] >> (2 * shift)) & 3);
    for (int g = 0; g < 16; ++g) {
        s.scale[g] = static_cast<int16_t>(b.scales[g] & 0x0F);
        s.min[g] = static_cast<int16_t>(b.scales[g] >> 4);
    }
    s.d = f16_to_f32(b.d);
    s.dmin = f16_to_f32(b.dmin);
}

inline void decode_superblock(const block_q3_K& b, SuperBlock& s) {
    for (int n = 0; n < 2; ++n)
        for (int shift = 0; shift < 4; ++shift) {
            const uint8_t mask = static_cast<uint8_t>(1u << (n * 4 + shift));
            for (int l = 0; l < 32; ++l) {
                const int low = (b.qs[n * 32 + l] >> (2 * shift)) & 3;
                s.q[n * 128 + shift * 32 + l] = static_cast<int8_t>(low - ((b.hmask[l] & mask) ? 0 : 4));
            }
        }
    q3_k_scales(b.scales, s.scale);
    for (int g = 0; g < 16; ++g) s.min[g] = 0;
    s.d = f16_to_f32(b.d);
    s.dmin = 0.0f;
}

inline void decode_superblock(const block_q4_K& b, SuperBlock& s) {
    for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) {
            s.q[j * 64 + l] = static_cast<int8_t>(b.qs[j * 32 + l] & 0x0F);
            s.q[j * 64 + 32 + l] = static_cast<int8_t>(b.qs[j * 32 + l] >> 4);
        }
    for (int j = 0; j < 8; ++j) {
        int sc, m;
        scale_min_k4(j, b.scales, sc, m);
        s.scale[2 * j] = s.scale[2 * j + 1] = static_cast<int16_t>(sc);
        s.min[2 * j] = s.min[2 * j + 1] = static_cast<int16_t>(m);
    }
    s.d = f16_to_f32(b.d);
    s.dmin = f16_to_f32(b.dmin);
}

inline void decode_superblock(const block_q5_K& b, SuperBlock& s) {
    for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) {
            const int h0 = (b.qh[l] >> (2 * j)) & 1, h1 = (b.qh[l] >> (2 * j + 1)) & 1;
            s.q[j * 64 + l] = static_cast<int8_t>((b.qs[j * 32 + l] & 0x0F) | (h0 << 4));
            s.q[j * 64 + 32 + l] = static_cast<int8_t>((b.qs[j * 32 + l] >> 4) | (h1 << 4));
        }
    for (int j = 0; j < 8; ++j) {
        int sc, m;
        scale_min_k4(j, b.scales, sc, m);
        s.scale[2 * j] = s.scale[2 * j + 1] = static_cast<int16_t>(sc);
        s.min[2 * j] = s.min[2 * j + 1] = static_cast<int16_t>(m);
    }
    s.d = f16_to_f32(b.d);
    s.dmin = f16_to_f32(b.dmin);
}

inline void decode_superblock(const block_q6_K& b, SuperBlock& s) {
    for (int n = 0; n < 2; ++n) {
        const uint8_t* ql = b.ql + 64 * n;
        const uint8_t* qh = b.qh + 32 * n;
        int8_t* q = s.q + 128 * n;
        for (int l = 0; l < 32; ++l) {
            q[l] = static_cast<int8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
    for (int g = 0; g < 16; ++g) {
        s.scale[g] = b.scales[g];
        s.min[g] = 0;
    }
    s.d = f16_to_f32(b.d);
    s.dmin = 0.0f;
}

inline void decode_superblock(const block_iq4_xs& b, SuperBlock& s) {
    for (int ib = 0; ib < 8; ++ib) {
        const uint8_t* qs = b.qs + 16 * ib;
        for (int j = 0; j < 16; ++j) {
            s.q[ib * 32 + j] = kvalues_iq4nl[qs[j] & 0x0F];
            s.q[ib * 32 + 16 + j] = kvalues_iq4nl[qs[j] >> 4];
        }
        const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b.scales_h >> (2 * ib)) & 3) << 4);
        s.scale[2 * ib] = s.scale[2 * ib + 1] = static_cast<int16_t>(ls - 32);
        s.min[2 * ib] = s.min[2 * ib + 1] = 0;
    }
    s.d = f16_to_f32(b.d);
    s.dmin = 0.0f;
}

}  // namespace cria::matmul::detail
