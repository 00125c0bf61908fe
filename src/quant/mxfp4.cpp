// MXFP4 (OCP microscaling FP4): 32 E2M1 values sharing one E8M0 power-of-two
// scale. ggml stores the E2M1 values doubled (kvalues_mxfp4) and so uses half
// the E8M0 scale; we do the same to keep its bytes.

#include <cmath>
#include <cstring>

#include "cria/quant/blocks.h"
#include "quant/codecs.h"
#include "quant/rounding.h"

namespace cria::quant::detail {
namespace {

// 2^(e - 128): the E8M0 value 2^(e - 127), halved. e = 0 and 1 are the
// subnormal floats 2^-128 and 2^-127. (e = 255, E8M0's NaN, is read as 2^127.)
float e8m0_to_f32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

// The code of the nearest representable value (the first one on ties).
uint8_t nearest_code(float x, float d) {
    int best = 0;
    float best_err = std::fabs(static_cast<float>(kvalues_mxfp4[0]) * d - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kvalues_mxfp4[i]) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return static_cast<uint8_t>(best);
}

}  // namespace

void dequantize_mxfp4(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const block_mxfp4*>(src);
    for (int64_t i = 0; i < n / QK_MXFP4; ++i) {
        const float d = e8m0_to_f32_half(blocks[i].e);
        float* y = dst + i * QK_MXFP4;
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            y[j] = static_cast<float>(kvalues_mxfp4[blocks[i].qs[j] & 0x0F]) * d;
            y[j + QK_MXFP4 / 2] = static_cast<float>(kvalues_mxfp4[blocks[i].qs[j] >> 4]) * d;
        }
    }
}

void quantize_mxfp4(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    auto* blocks = static_cast<block_mxfp4*>(dst);
    for (int64_t i = 0; i < n / QK_MXFP4; ++i) {
        const float* x = src + i * QK_MXFP4;
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; ++j) {
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
        }
        // The largest E2M1 magnitude is 6 = 1.5 * 2^2, so the shared exponent is
        // floor(log2(amax)) - 2 (biased by 127). log2f as ggml computes it (it can
        // round up just below a power of two). Unlike ggml, exponents below the
        // E8M0 range clamp to 0 instead of wrapping around to huge scales.
        int e = 0;
        if (amax > 0.0f) {
            e = truncate_to_int(std::floor(std::log2(amax)) - 2 + 127);
            e = e < 0 ? 0 : (e > 254 ? 254 : e);
        }
        const float d = e8m0_to_f32_half(static_cast<uint8_t>(e));
        blocks[i].e = static_cast<uint8_t>(e);
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            blocks[i].qs[j] = static_cast<uint8_t>(nearest_code(x[j], d) | (nearest_code(x[j + QK_MXFP4 / 2], d) << 4));
        }
    }
}

}  // namespace cria::quant::detail
