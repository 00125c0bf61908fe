// The k-quants: super-blocks of 256 values split into sub-blocks of 16 or 32,
// each with a small integer scale (and for Q2_K/Q4_K/Q5_K a minimum) relative
// to f16 super-block factors. Without an importance matrix the quantizers
// follow ggml's quantize_row_*_K_ref; with one, ggml's quantize_row_*_K_impl.

#include <cmath>
#include <cstring>

#include "cria/quant/blocks.h"
#include "quant/codecs.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace cria::quant::detail {
namespace {

int clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

float mean_square(const float* x, int n) {
    float sum_x2 = 0;
    for (int j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
    return sum_x2 / static_cast<float>(n);
}

// 2-bit planes of Q2_K and Q3_K: within each half (128 values) byte l holds
// values l, l+32, l+64, l+96 in bit pairs 0-1, 2-3, 4-5, 6-7.
void pack_2bit_planes(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                                 (L[j + l + 96] << 6));
        }
    }
}

// Q3_K: sixteen 6-bit scales (stored +32) in 12 bytes. Low nibbles of scales
// 0-7 and 8-15 share bytes 0-7; the top two bits of scale j sit in byte
// 8 + j%4 at bit 2*(j/4).
void set_q3_scale(uint8_t* scales, int j, int l) {
    if (j < 8) {
        scales[j] = static_cast<uint8_t>(l & 0xF);
    } else {
        scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
    }
    scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
}

int q3_scale(const uint8_t* scales, int j) {
    const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// Q4_K/Q5_K: eight 6-bit scales and eight 6-bit mins in 12 bytes. Sub-blocks
// 0-3 use bytes 0-3 (scale) and 4-7 (min) directly; sub-blocks 4-7 keep their
// low nibbles in bytes 8-11 and their top two bits in the spare top bits of
// bytes 0-7.
void set_scale_min_k4(uint8_t* q, int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        q[j] = ls;
        q[j + 4] = lm;
    } else {
        q[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        q[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        q[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
}

void scale_min_k4(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

}  // namespace

// ---- Q2_K: 16 x 16 values, value = d * sc * q - dmin * m, q in [0, 3] ------------

void dequantize_q2_K(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q2_K*>(src);
    float* y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const block_q2_K& b = blocks[i];
        const float d = f16_to_f32(b.d);
        const float dmin = f16_to_f32(b.dmin);
        const uint8_t* q = b.qs;
        int is = 0;
        for (int half = 0; half < QK_K; half += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {  // two sub-blocks of 16 per bit pair
                    const uint8_t sc = b.scales[is++];
                    const float dl = d * static_cast<float>(sc & 0xF);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
                }
            }
            q += 32;
        }
    }
}

namespace {

// Final levels given the stored (rounded) scales: q = round((x + m) / d).
void requantize_q2_K(const float* x, const block_q2_K& b, float d_all, float m_all, uint8_t* L) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = d_all * static_cast<float>(b.scales[j] & 0xF);
        if (d == 0) continue;
        const float m = m_all * static_cast<float>(b.scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = static_cast<uint8_t>(clamp(nearest_int((x[16 * j + ii] + m) / d), 0, 3));
    }
}

void quantize_q2_K_block_ref(const float* x, block_q2_K& b) {
    uint8_t L[QK_K], aux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    float max_scale = 0;  // the min is subtracted, so scales are never negative
    float max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], aux, -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
        const float iscale = 15.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
        b.d = f32_to_f16(max_scale / 15.f);
    } else {
        std::memset(b.scales, 0, sizeof(b.scales));
        b.d = f32_to_f16(0.f);
    }
    if (max_min > 0) {
        const float iscale = 15.f / max_min;
        for (int j = 0; j < QK_K / 16; ++j) b.scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
        b.dmin = f32_to_f16(max_min / 15.f);
    } else {
        b.dmin = f32_to_f16(0.f);
    }
    requantize_q2_K(x, b, f16_to_f32(b.d), f16_to_f32(b.dmin), L);
    pack_2bit_planes(L, b.qs);
}

void quantize_q2_K_block_weighted(const float* x, const float* importance, block_q2_K& b) {
    uint8_t L[QK_K], aux[16], Ls[QK_K / 16], Lm[QK_K / 16];
    float mins[QK_K / 16], scales[QK_K / 16], sw[QK_K / 16], weight[16];
    const float sigma2 = mean_square(x, QK_K);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float* qw = importance + 16 * j;
        for (int l = 0; l < 16; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
        sw[j] = 0;
        for (int l = 0; l < 16; ++l) sw[j] += weight[l];
        scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], aux, -0.9f, 0.05f, 36, false);
    }
    // The sub-block scales and mins are themselves quantized to 4 bits,
    // weighted by how much each sub-block matters.
    const float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    const float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    b.d = f32_to_f16(dm);
    b.dmin = f32_to_f16(mm);
    for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
    requantize_q2_K(x, b, f16_to_f32(b.d), f16_to_f32(b.dmin), L);
    pack_2bit_planes(L, b.qs);
}

}  // namespace

void quantize_q2_K(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q2_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        if (importance) {
            quantize_q2_K_block_weighted(src + i * QK_K, importance + i * QK_K, blocks[i]);
        } else {
            quantize_q2_K_block_ref(src + i * QK_K, blocks[i]);
        }
    }
}

// ---- Q3_K: 16 x 16 values, value = d * (sc - 32) * (q - 4), q in [0, 7] ----------
// Low two bits of q in 2-bit planes, the high bit in hmask.

void dequantize_q3_K(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q3_K*>(src);
    float* y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const block_q3_K& b = blocks[i];
        const float d_all = f16_to_f32(b.d);
        const uint8_t* q = b.qs;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < QK_K; half += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const float dl = d_all * static_cast<float>(q3_scale(b.scales, is++));
                    for (int l = 0; l < 16; ++l) {
                        const int low = (q[l + 16 * part] >> shift) & 3;
                        const int high = (b.hmask[l + 16 * part] & m) ? 0 : 4;
                        *y++ = dl * static_cast<float>(low - high);
                    }
                }
                m = static_cast<uint8_t>(m << 1);
            }
            q += 32;
        }
    }
}

namespace {

// Final levels from the stored scales, then the high bits into hmask: the
// 32 values j, j+32, ... share hmask byte j%32, one bit per group of 32.
void finish_q3_K(const float* x, int8_t* L, block_q3_K& b) {
    const float d_all = f16_to_f32(b.d);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = d_all * static_cast<float>(q3_scale(b.scales, j));
        if (d == 0) continue;
        for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = static_cast<int8_t>(clamp(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
    std::memset(b.hmask, 0, sizeof(b.hmask));
    uint8_t levels[QK_K];
    for (int j = 0; j < QK_K; ++j) {
        int l = L[j];
        if (l > 3) {
            b.hmask[j % (QK_K / 8)] |= static_cast<uint8_t>(1u << (j / (QK_K / 8)));
            l -= 4;
        }
        levels[j] = static_cast<uint8_t>(l);
    }
    pack_2bit_planes(levels, b.qs);
}

void quantize_q3_K_block_ref(const float* x, block_q3_K& b) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        if (std::fabs(scales[j]) > amax) {
            amax = std::fabs(scales[j]);
            max_scale = scales[j];
        }
    }
    std::memset(b.scales, 0, sizeof(b.scales));
    if (max_scale != 0) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            const int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
            set_q3_scale(b.scales, j, clamp(l, -32, 31) + 32);
        }
        b.d = f32_to_f16(1 / iscale);
    } else {
        b.d = f32_to_f16(0.f);
    }
    finish_q3_K(x, L, b);
}

void quantize_q3_K_block_weighted(const float* x, const float* importance, block_q3_K& b) {
    int8_t L[QK_K], Ls[QK_K / 16];
    float scales[QK_K / 16], weight[16], sw[QK_K / 16];
    const float sigma2 = 2 * mean_square(x, QK_K);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float* qw = importance + 16 * j;
        for (int l = 0; l < 16; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 16; ++l) sumw += weight[l];
        sw[j] = sumw;
        scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, weight);
    }
    std::memset(b.scales, 0, sizeof(b.scales));
    const float d_block = make_qx_quants(QK_K / 16, 32, scales, Ls, sw);
    for (int j = 0; j < QK_K / 16; ++j) set_q3_scale(b.scales, j, Ls[j]);
    b.d = f32_to_f16(d_block);
    finish_q3_K(x, L, b);
}

}  // namespace

void quantize_q3_K(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q3_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        if (importance) {
            quantize_q3_K_block_weighted(src + i * QK_K, importance + i * QK_K, blocks[i]);
        } else {
            quantize_q3_K_block_ref(src + i * QK_K, blocks[i]);
        }
    }
}

// ---- Q4_K / Q5_K: 8 x 32 values, value = d * sc * q - dmin * m ---------------------

namespace {

// What Q4_K and Q5_K share: the sub-block scale search, the 6-bit scale and
// min codes, and the final levels L (in [0, nmax]). Returns d and dmin.
struct K4Header {
    f16_bits d;
    f16_bits dmin;
};

K4Header quantize_k4_superblock(const float* x, const float* importance, int nmax, uint8_t* scale_bytes, uint8_t* L) {
    uint8_t aux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    K4Header h{};
    std::memset(scale_bytes, 0, K_SCALE_SIZE);
    if (!importance) {
        float max_scale = 0;
        float max_min = 0;
        for (int j = 0; j < QK_K / 32; ++j) {
            // Weights favour large values, against the sub-block's rms level.
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
            const float av_x = std::sqrt(sum_x2 / 32);
            for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
            scales[j] = nmax == 15
                ? make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], aux, -1.f, 0.1f, 20, false)
                : make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], aux, -0.5f, 0.1f, 15, false);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < QK_K / 32; ++j) {
            uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
            uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
            ls = ls < 63 ? ls : 63;
            lm = lm < 63 ? lm : 63;
            set_scale_min_k4(scale_bytes, j, ls, lm);
        }
        h.d = f32_to_f16(max_scale / 63.f);
        h.dmin = f32_to_f16(max_min / 63.f);
    } else {
        uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
        float sw[QK_K / 32];
        const float sigma2 = 2 * mean_square(x, QK_K);
        for (int j = 0; j < QK_K / 32; ++j) {
            const float* qw = importance + 32 * j;
            for (int l = 0; l < 32; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
            float sumw = 0;
            for (int l = 0; l < 32; ++l) sumw += weights[l];
            sw[j] = sumw;
            scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], aux, -0.9f, 0.05f, 36, false);
        }
        const float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
        const float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
        for (int j = 0; j < QK_K / 32; ++j) set_scale_min_k4(scale_bytes, j, Ls[j], Lm[j]);
        h.d = f32_to_f16(d_block);
        h.dmin = f32_to_f16(m_block);
    }
    // Final levels against the rounded scales actually stored.
    const float d_all = f16_to_f32(h.d);
    const float m_all = f16_to_f32(h.dmin);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc = 0, m = 0;
        scale_min_k4(j, scale_bytes, sc, m);
        const float d = d_all * static_cast<float>(sc);
        if (d == 0) continue;
        const float dm = m_all * static_cast<float>(m);
        for (int ii = 0; ii < 32; ++ii) L[32 * j + ii] = static_cast<uint8_t>(clamp(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
    return h;
}

}  // namespace

void dequantize_q4_K(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q4_K*>(src);
    float* y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const block_q4_K& b = blocks[i];
        const float d = f16_to_f32(b.d);
        const float min = f16_to_f32(b.dmin);
        const uint8_t* q = b.qs;
        for (int is = 0; is < QK_K / 32; is += 2) {  // 64 values: low nibbles, then high nibbles
            uint8_t sc = 0, m = 0;
            scale_min_k4(is, b.scales, sc, m);
            const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
            scale_min_k4(is + 1, b.scales, sc, m);
            const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
            q += 32;
        }
    }
}

void quantize_q4_K(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q4_K*>(dst);
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        block_q4_K& b = blocks[i];
        const K4Header h = quantize_k4_superblock(src + i * QK_K, importance ? importance + i * QK_K : nullptr, 15, b.scales, L);
        b.d = h.d;
        b.dmin = h.dmin;
        for (int j = 0; j < QK_K; j += 64) {
            for (int l = 0; l < 32; ++l) b.qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

void dequantize_q5_K(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q5_K*>(src);
    float* y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const block_q5_K& b = blocks[i];
        const float d = f16_to_f32(b.d);
        const float min = f16_to_f32(b.dmin);
        const uint8_t* ql = b.qs;
        uint8_t u1 = 1, u2 = 2;  // the fifth bits of each 64 values take two bits of qh
        for (int is = 0; is < QK_K / 32; is += 2) {
            uint8_t sc = 0, m = 0;
            scale_min_k4(is, b.scales, sc, m);
            const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
            scale_min_k4(is + 1, b.scales, sc, m);
            const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (b.qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (b.qh[l] & u2 ? 16 : 0)) - m2;
            ql += 32;
            u1 = static_cast<uint8_t>(u1 << 2);
            u2 = static_cast<uint8_t>(u2 << 2);
        }
    }
}

void quantize_q5_K(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q5_K*>(dst);
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        block_q5_K& b = blocks[i];
        const K4Header h = quantize_k4_superblock(src + i * QK_K, importance ? importance + i * QK_K : nullptr, 31, b.scales, L);
        b.d = h.d;
        b.dmin = h.dmin;
        std::memset(b.qh, 0, sizeof(b.qh));
        uint8_t m1 = 1, m2 = 2;
        for (int j = 0; j < QK_K; j += 64) {
            for (int l = 0; l < 32; ++l) {
                int l1 = L[j + l];
                int l2 = L[j + l + 32];
                if (l1 > 15) { l1 -= 16; b.qh[l] |= m1; }
                if (l2 > 15) { l2 -= 16; b.qh[l] |= m2; }
                b.qs[j / 2 + l] = static_cast<uint8_t>(l1 | (l2 << 4));
            }
            m1 = static_cast<uint8_t>(m1 << 2);
            m2 = static_cast<uint8_t>(m2 << 2);
        }
    }
}

// ---- Q6_K: 16 x 16 values, value = d * sc * (q - 32), sc int8, q in [0, 63] --------
// Low four bits in ql, high two bits in qh.

void dequantize_q6_K(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q6_K*>(src);
    float* y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const block_q6_K& b = blocks[i];
        const float d = f16_to_f32(b.d);
        const uint8_t* ql = b.ql;
        const uint8_t* qh = b.qh;
        const int8_t* sc = b.scales;
        for (int half = 0; half < QK_K; half += 128) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
                y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
                y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
                y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

void quantize_q6_K(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q6_K*>(dst);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float* x = src + i * QK_K;
        block_q6_K& b = blocks[i];
        float max_scale = 0;
        float max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            // With an imatrix the importances are the weights as they are (ggml
            // found sqrt(sigma^2 + x^2) scaling did not help for 6 bits).
            const float* qw = importance ? importance + i * QK_K + 16 * ib : nullptr;
            scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, qw);
            if (std::fabs(scales[ib]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[ib]);
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&b, 0, sizeof(b));
            continue;
        }
        const float iscale = -128.f / max_scale;
        b.d = f32_to_f16(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const int l = nearest_int(iscale * scales[ib]);
            b.scales[ib] = static_cast<int8_t>(l < 127 ? l : 127);
        }
        const float d_all = f16_to_f32(b.d);
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = d_all * static_cast<float>(b.scales[j]);
            if (d == 0) continue;
            for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = static_cast<int8_t>(clamp(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
        }
        uint8_t* ql = b.ql;
        uint8_t* qh = b.qh;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l) {
                const int v0 = L[j + l], v1 = L[j + l + 32], v2 = L[j + l + 64], v3 = L[j + l + 96];
                ql[l] = static_cast<uint8_t>((v0 & 0xF) | ((v2 & 0xF) << 4));
                ql[l + 32] = static_cast<uint8_t>((v1 & 0xF) | ((v3 & 0xF) << 4));
                qh[l] = static_cast<uint8_t>((v0 >> 4) | ((v1 >> 4) << 2) | ((v2 >> 4) << 4) | ((v3 >> 4) << 6));
            }
            ql += 64;
            qh += 32;
        }
    }
}

// ---- Q8_K: 256 values, value = d * q, f32 d; bsums = sums of 16 levels ----------------

void dequantize_q8_K(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q8_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        for (int j = 0; j < QK_K; ++j) dst[i * QK_K + j] = blocks[i].d * static_cast<float>(blocks[i].qs[j]);
    }
}

void quantize_q8_K(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    auto* blocks = static_cast<block_q8_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float* x = src + i * QK_K;
        block_q8_K& b = blocks[i];
        float max = 0;
        float amax = 0;
        for (int j = 0; j < QK_K; ++j) {
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        if (amax == 0) {
            // ggml leaves bsums untouched here; we zero them for determinism.
            std::memset(&b, 0, sizeof(b));
            continue;
        }
        // -127 (not -128) keeps every level symmetric, which the IQ2 dot products rely on.
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; ++j) {
            const int v = nearest_int(iscale * x[j]);
            b.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii) sum += b.qs[j * 16 + ii];
            b.bsums[j] = static_cast<int16_t>(sum);
        }
        b.d = 1 / iscale;
    }
}

}  // namespace cria::quant::detail
