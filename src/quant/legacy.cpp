// The "legacy" block formats: 32 values per block, one f16 scale (and for the
// _1 types an f16 minimum). The reference quantizers round exactly as ggml's
// quantize_row_*_ref do, so their bytes match llama.cpp's; with an importance
// matrix they switch to a weighted scale search, like ggml's quantize_*_impl.

#include <cmath>
#include <cstring>
#include <limits>

#include "cria/quant/blocks.h"
#include "quant/codecs.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace cria::quant::detail {
namespace {

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;

// Value of largest magnitude in a block (the first one on ties).
float signed_absmax(const float* x) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, float& min, float& max) {
    min = std::numeric_limits<float>::max();
    max = -std::numeric_limits<float>::max();
    for (int j = 0; j < kBlock; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

// Nibble layout shared by all 4/5-bit legacy types: byte j holds value j in
// its low nibble and value j+16 in its high nibble.
void pack_nibbles(const uint8_t* levels, uint8_t* qs) {
    for (int j = 0; j < kHalf; ++j) {
        qs[j] = static_cast<uint8_t>((levels[j] & 0x0F) | ((levels[j + kHalf] & 0x0F) << 4));
    }
}

// The fifth bit of value j goes to bit j of the 32-bit qh word.
void pack_fifth_bits(const uint8_t* levels, uint8_t* qh_bytes) {
    uint32_t qh = 0;
    for (int j = 0; j < kBlock; ++j) qh |= ((levels[j] & 0x10u) >> 4) << j;
    std::memcpy(qh_bytes, &qh, sizeof(qh));
}

// Fifth bit of value j (0 or 16), from the qh word.
int fifth_bit(uint32_t qh, int j) { return static_cast<int>((qh >> j) << 4) & 0x10; }

// Per-value weights of the imatrix path: importance * sqrt(sigma^2 + x^2),
// where sigma^2 is the mean square of the whole row.
float row_mean_square(const float* x, int64_t n) {
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
    return sum_x2 / static_cast<float>(n);
}

void importance_weights(const float* x, const float* importance, float sigma2, float* weight) {
    for (int j = 0; j < kBlock; ++j) weight[j] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

}  // namespace

// ---- Q4_0: value = d * (q - 8), q in [0, 15] ---------------------------------

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q4_0*>(src);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        float* y = dst + i * kBlock;
        for (int j = 0; j < kHalf; ++j) {
            y[j] = static_cast<float>((blocks[i].qs[j] & 0x0F) - 8) * d;
            y[j + kHalf] = static_cast<float>((blocks[i].qs[j] >> 4) - 8) * d;
        }
    }
}

// Levels of one block of a symmetric type (Q4_0: half = 8, Q5_0: half = 16):
// value = d * (q - half), q in [0, 2 * half - 1]. Returns d. With importance
// weights, ggml's weighted search (make_qx_quants); without, the value of
// largest magnitude maps to -half exactly (the asymmetric end of the range)
// and the others round half up via +half+0.5 and truncation.
namespace {
float symmetric_block_levels(const float* x, const float* importance, float sigma2, int half, uint8_t* levels) {
    if (importance) {
        float weight[kBlock];
        int8_t L[kBlock];
        importance_weights(x, importance, sigma2, weight);
        const float d = make_qx_quants(kBlock, half, x, L, weight);
        for (int j = 0; j < kBlock; ++j) levels[j] = static_cast<uint8_t>(L[j]);
        return d;
    }
    const float d = signed_absmax(x) / static_cast<float>(-half);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    const int top = 2 * half - 1;
    const float bias = static_cast<float>(half) + 0.5f;  // 8.5f or 16.5f exactly, added in one step as ggml does
    for (int j = 0; j < kBlock; ++j) {
        const int q = truncate_to_int8(x[j] * id + bias);
        levels[j] = static_cast<uint8_t>(q < top ? q : top);
    }
    return d;
}
}  // namespace

void quantize_q4_0(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q4_0*>(dst);
    const float sigma2 = importance ? row_mean_square(src, n) : 0.0f;
    uint8_t levels[kBlock];
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = symmetric_block_levels(src + i * kBlock, importance ? importance + i * kBlock : nullptr,
                                               sigma2, 8, levels);
        blocks[i].d = f32_to_f16(d);
        pack_nibbles(levels, blocks[i].qs);
    }
}

// ---- Q4_1: value = d * q + m, q in [0, 15] ------------------------------------

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q4_1*>(src);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        const float m = f16_to_f32(blocks[i].m);
        float* y = dst + i * kBlock;
        for (int j = 0; j < kHalf; ++j) {
            y[j] = static_cast<float>(blocks[i].qs[j] & 0x0F) * d + m;
            y[j + kHalf] = static_cast<float>(blocks[i].qs[j] >> 4) * d + m;
        }
    }
}

void quantize_q4_1(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q4_1*>(dst);
    uint8_t levels[kBlock];
    if (importance) {
        const float sigma2 = row_mean_square(src, n);
        float weight[kBlock];
        uint8_t aux[kBlock];
        for (int64_t i = 0; i < n / kBlock; ++i) {
            const float* x = src + i * kBlock;
            importance_weights(x, importance + i * kBlock, sigma2, weight);
            float neg_min = 0;
            const float d = make_qkx3_quants(kBlock, 15, x, weight, levels, &neg_min, aux, -0.9f, 0.05f, 36, false);
            blocks[i].d = f32_to_f16(d);
            blocks[i].m = f32_to_f16(-neg_min);
            pack_nibbles(levels, blocks[i].qs);
        }
        return;
    }
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float* x = src + i * kBlock;
        float min = 0, max = 0;
        min_max(x, min, max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        blocks[i].d = f32_to_f16(d);
        blocks[i].m = f32_to_f16(min);
        for (int j = 0; j < kBlock; ++j) {
            const int q = truncate_to_int8((x[j] - min) * id + 0.5f);
            levels[j] = static_cast<uint8_t>(q < 15 ? q : 15);
        }
        pack_nibbles(levels, blocks[i].qs);
    }
}

// ---- Q5_0: value = d * (q - 16), q in [0, 31] ---------------------------------

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q5_0*>(src);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        uint32_t qh = 0;
        std::memcpy(&qh, blocks[i].qh, sizeof(qh));
        float* y = dst + i * kBlock;
        for (int j = 0; j < kHalf; ++j) {
            const int q0 = ((blocks[i].qs[j] & 0x0F) | fifth_bit(qh, j)) - 16;
            const int q1 = ((blocks[i].qs[j] >> 4) | fifth_bit(qh, j + kHalf)) - 16;
            y[j] = static_cast<float>(q0) * d;
            y[j + kHalf] = static_cast<float>(q1) * d;
        }
    }
}

void quantize_q5_0(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q5_0*>(dst);
    const float sigma2 = importance ? row_mean_square(src, n) : 0.0f;
    uint8_t levels[kBlock];
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = symmetric_block_levels(src + i * kBlock, importance ? importance + i * kBlock : nullptr,
                                               sigma2, 16, levels);
        blocks[i].d = f32_to_f16(d);
        pack_nibbles(levels, blocks[i].qs);
        pack_fifth_bits(levels, blocks[i].qh);
    }
}

// ---- Q5_1: value = d * q + m, q in [0, 31] ------------------------------------

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q5_1*>(src);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        const float m = f16_to_f32(blocks[i].m);
        uint32_t qh = 0;
        std::memcpy(&qh, blocks[i].qh, sizeof(qh));
        float* y = dst + i * kBlock;
        for (int j = 0; j < kHalf; ++j) {
            const int q0 = (blocks[i].qs[j] & 0x0F) | fifth_bit(qh, j);
            const int q1 = (blocks[i].qs[j] >> 4) | fifth_bit(qh, j + kHalf);
            y[j] = static_cast<float>(q0) * d + m;
            y[j + kHalf] = static_cast<float>(q1) * d + m;
        }
    }
}

void quantize_q5_1(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_q5_1*>(dst);
    uint8_t levels[kBlock];
    if (importance) {
        const float sigma2 = row_mean_square(src, n);
        float weight[kBlock];
        uint8_t aux[kBlock];
        for (int64_t i = 0; i < n / kBlock; ++i) {
            const float* x = src + i * kBlock;
            importance_weights(x, importance + i * kBlock, sigma2, weight);
            float neg_min = 0;
            const float d = make_qkx3_quants(kBlock, 31, x, weight, levels, &neg_min, aux, -0.9f, 0.05f, 36, false);
            blocks[i].d = f32_to_f16(d);
            blocks[i].m = f32_to_f16(-neg_min);
            pack_nibbles(levels, blocks[i].qs);
            pack_fifth_bits(levels, blocks[i].qh);
        }
        return;
    }
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float* x = src + i * kBlock;
        float min = 0, max = 0;
        min_max(x, min, max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        blocks[i].d = f32_to_f16(d);
        blocks[i].m = f32_to_f16(min);
        // No clamp here (ggml has none): (x - min) * id + 0.5 stays below 32.
        for (int j = 0; j < kBlock; ++j) levels[j] = truncate_to_uint8((x[j] - min) * id + 0.5f);
        pack_nibbles(levels, blocks[i].qs);
        pack_fifth_bits(levels, blocks[i].qh);
    }
}

// ---- Q8_0 / Q8_1: value = d * q, q in [-127, 127] -------------------------------

namespace {

// Scale d = absmax / 127 and the rounded (half away from zero) levels.
float quantize_q8_block(const float* x, int8_t* qs) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        const float ax = std::fabs(x[j]);
        amax = amax > ax ? amax : ax;
    }
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < kBlock; ++j) qs[j] = truncate_to_int8(std::round(x[j] * id));
    return d;
}

}  // namespace

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q8_0*>(src);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        for (int j = 0; j < kBlock; ++j) dst[i * kBlock + j] = static_cast<float>(blocks[i].qs[j]) * d;
    }
}

void quantize_q8_0(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    auto* blocks = static_cast<block_q8_0*>(dst);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        blocks[i].d = f32_to_f16(quantize_q8_block(src + i * kBlock, blocks[i].qs));
    }
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_q8_1*>(src);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        for (int j = 0; j < kBlock; ++j) dst[i * kBlock + j] = static_cast<float>(blocks[i].qs[j]) * d;
    }
}

void quantize_q8_1(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    auto* blocks = static_cast<block_q8_1*>(dst);
    for (int64_t i = 0; i < n / kBlock; ++i) {
        const float d = quantize_q8_block(src + i * kBlock, blocks[i].qs);
        int sum = 0;
        for (int j = 0; j < kBlock; ++j) sum += blocks[i].qs[j];
        blocks[i].d = f32_to_f16(d);
        blocks[i].s = f32_to_f16(static_cast<float>(sum) * d);  // lets dot products fold in an offset
    }
}

}  // namespace cria::quant::detail
