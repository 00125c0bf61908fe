// IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear code book
// (kvalues_iq4nl), which spends more levels near zero where weights cluster.
// IQ4_NL has one f16 scale per 32 values; IQ4_XS has an f16 scale per 256
// values and a 6-bit sub-scale per 32. The quantizer is ggml's
// quantize_row_iq4_nl_impl as llama-quantize runs it (quantize_iq4_nl /
// quantize_iq4_xs, 7 scale candidates either side), with or without imatrix.

#include <array>
#include <cmath>
#include <cstring>

#include "cria/quant/blocks.h"
#include "quant/codecs.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace cria::quant::detail {
namespace {

constexpr int kBlock = 32;
constexpr int kTries = 7;  // candidate inverse scales (k + values[0]) / max, k in [-7, 7]

// kTwiceMidpoint[i] = kvalues_iq4nl[i-1] + kvalues_iq4nl[i]: twice the
// boundary between levels i-1 and i (index 0 unused).
constexpr auto kTwiceMidpoint = [] {
    std::array<float, 16> m{};
    for (int i = 1; i < 16; ++i) m[i] = static_cast<float>(kvalues_iq4nl[i - 1] + kvalues_iq4nl[i]);
    return m;
}();

// Index of the code-book value nearest to x (ties go to the larger value).
// The book is sorted, so x belongs to level i once it reaches the midpoint of
// levels i-1 and i; comparing 2x with twice the midpoint keeps both sides
// exact. A branch-free binary search: the comparisons are unpredictable.
int nearest_level(float x) {
    const float x2 = x + x;
    int idx = 0;
    for (int step = 8; step > 0; step >>= 1) {
        const int j = idx + step;
        idx = x2 >= kTwiceMidpoint[j] ? j : idx;
    }
    return idx;
}

// Best scale for one block of 32 values, with its levels in L. Returns 0
// (levels 0) for a block that is all (near) zero.
float best_block_scale(const float* x, const float* weight, uint8_t* L) {
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    if (amax < kGroupMaxEps) {
        std::memset(L, 0, kBlock);
        return 0;
    }
    const int v0 = kvalues_iq4nl[0];  // -127: the value of largest magnitude maps here
    float id = 1 / (-max / static_cast<float>(v0));
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
        const int l = nearest_level(id * x[j]);
        L[j] = static_cast<uint8_t>(l);
        const float q = kvalues_iq4nl[l];
        sumqx += weight[j] * q * x[j];
        sumq2 += weight[j] * q * q;
    }
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kTries; itry <= kTries; ++itry) {
        id = static_cast<float>(itry + v0) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < kBlock; ++j) {
            const float q = kvalues_iq4nl[nearest_level(id * x[j])];
            sumqx += weight[j] * q * x[j];
            sumq2 += weight[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// Weights of the error: importance * sqrt(sigma^2 + x^2) with an imatrix,
// x^2 without. sigma^2 is twice the mean square of the super-block.
void block_weights(const float* x, const float* importance, float sigma2, float* weight) {
    for (int j = 0; j < kBlock; ++j) {
        weight[j] = importance ? importance[j] * std::sqrt(sigma2 + x[j] * x[j]) : x[j] * x[j];
    }
}

float super_block_sigma2(const float* x, int n) {
    float sigma2 = 0;
    for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
    return sigma2 * (2.f / static_cast<float>(n));
}

void pack_levels(const uint8_t* L, int n, uint8_t* qs) {
    for (int i = 0; i < n / kBlock; ++i) {
        for (int j = 0; j < 16; ++j) qs[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
    }
}

}  // namespace

void dequantize_iq4_nl(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_iq4_nl*>(src);
    for (int64_t i = 0; i < n / QK4_NL; ++i) {
        const float d = f16_to_f32(blocks[i].d);
        float* y = dst + i * QK4_NL;
        for (int j = 0; j < QK4_NL / 2; ++j) {
            y[j] = d * static_cast<float>(kvalues_iq4nl[blocks[i].qs[j] & 0xf]);
            y[j + QK4_NL / 2] = d * static_cast<float>(kvalues_iq4nl[blocks[i].qs[j] >> 4]);
        }
    }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_iq4_nl*>(dst);
    uint8_t L[QK4_NL];
    float weight[QK4_NL];
    for (int64_t i = 0; i < n / QK4_NL; ++i) {
        const float* x = src + i * QK4_NL;
        block_weights(x, importance ? importance + i * QK4_NL : nullptr, super_block_sigma2(x, QK4_NL), weight);
        const float d = best_block_scale(x, weight, L);
        blocks[i].d = f32_to_f16(d);
        // Final levels against the chosen (unrounded) scale.
        const float id = d != 0 ? 1 / d : 0;
        for (int j = 0; j < QK4_NL; ++j) L[j] = static_cast<uint8_t>(nearest_level(id * x[j]));
        pack_levels(L, QK4_NL, blocks[i].qs);
    }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_iq4_xs*>(src);
    float* y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const block_iq4_xs& b = blocks[i];
        const float d = f16_to_f32(b.d);
        const uint8_t* qs = b.qs;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const int ls = ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b.scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * static_cast<float>(ls - 32);
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0xf]);
                y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
            }
            y += 32;
            qs += 16;
        }
    }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t n, const float* importance) {
    auto* blocks = static_cast<block_iq4_xs*>(dst);
    constexpr int kSub = QK_K / kBlock;
    uint8_t L[QK_K];
    float weight[kBlock];
    float scales[kSub];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float* x = src + i * QK_K;
        block_iq4_xs& b = blocks[i];
        const float sigma2 = super_block_sigma2(x, QK_K);
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < kSub; ++ib) {
            block_weights(x + ib * kBlock, importance ? importance + i * QK_K + ib * kBlock : nullptr, sigma2, weight);
            scales[ib] = best_block_scale(x + ib * kBlock, weight, L + ib * kBlock);
            if (std::fabs(scales[ib]) > amax_scale) {
                amax_scale = std::fabs(scales[ib]);
                max_scale = scales[ib];
            }
        }
        // Sub-scales become 6-bit integers l in [-32, 31] of d = -max_scale/32;
        // each block's levels are then recomputed for its rounded scale d * l.
        const float d = -max_scale / 32;
        b.d = f32_to_f16(d);
        b.scales_h = 0;
        const float id = d != 0 ? 1 / d : 0.f;
        for (int ib = 0; ib < kSub; ++ib) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * static_cast<float>(l);
            const float idl = dl != 0 ? 1 / dl : 0.f;
            for (int j = 0; j < kBlock; ++j) L[ib * kBlock + j] = static_cast<uint8_t>(nearest_level(idl * x[ib * kBlock + j]));
            l += 32;
            const auto low = static_cast<uint8_t>(l & 0xf);
            if (ib % 2 == 0) {
                b.scales_l[ib / 2] = low;
            } else {
                b.scales_l[ib / 2] |= static_cast<uint8_t>(low << 4);
            }
            b.scales_h = static_cast<uint16_t>(b.scales_h | ((l >> 4) << (2 * ib)));
        }
        pack_levels(L, QK_K, b.qs);
    }
}

}  // namespace cria::quant::detail
