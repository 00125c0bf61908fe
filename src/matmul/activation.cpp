// Activation preparation: f32 vectors quantised to the 8-bit block formats the
// quantised dot products pair them with. The rounding follows ggml's scalar
// reference (quantize_row_q8_0_ref / q8_1_ref / q8_K_ref) so that our scalar
// dot products compute the very same integers ggml's reference does.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cria/core/float16.h"
#include "cria/cpu/features.h"
#include "cria/quant/blocks.h"
#include "matmul/kernels.h"

namespace cria::matmul::detail {

using namespace cria::quant;

namespace {

size_t round_up_64(size_t n) { return (n + 63) / 64 * 64; }

// roundf (ties away from zero) for |v| < 2^31, without the libm call: the
// truncation and the remainder are exact, so this is bit-for-bit roundf and
// the compiler can vectorise it.
inline int round_half_away(float v) {
    const int t = static_cast<int>(v);  // truncates toward zero
    const float rest = v - static_cast<float>(t);
    return t + (rest >= 0.5f ? 1 : 0) - (rest <= -0.5f ? 1 : 0);
}

// Q8_0 / Q8_1: d = max|x| / 127, q = round-half-away(x / d).
template <bool WithSum>
void quantize_q8_0_like(const float* x, int64_t k, void* out) {
    const int64_t nb = k / QK8_0;
    for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + b * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(xb[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int8_t q[QK8_0];
        int sum = 0;
        for (int j = 0; j < QK8_0; ++j) {
            q[j] = static_cast<int8_t>(round_half_away(xb[j] * id));
            sum += q[j];
        }
        if constexpr (WithSum) {
            auto* y = static_cast<block_q8_1*>(out) + b;
            y->d = f32_to_f16(d);
            y->s = f32_to_f16(static_cast<float>(sum) * d);
            std::memcpy(y->qs, q, sizeof q);
        } else {
            auto* y = static_cast<block_q8_0*>(out) + b;
            y->d = f32_to_f16(d);
            std::memcpy(y->qs, q, sizeof q);
        }
    }
}

// Round to nearest, ties to even, as ggml's nearest_int (valid for |v| < 2^22).
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// Q8_K: the value of largest magnitude maps to -127 (keeping its sign), so the
// full range is used; bsums hold the sum of every 16 quants.
void quantize_q8_K(const float* x, int64_t k, void* out) {
    const int64_t nb = k / QK_K;
    auto* y = static_cast<block_q8_K*>(out);
    for (int64_t b = 0; b < nb; ++b, x += QK_K) {
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            y[b].d = 0.0f;
            std::memset(y[b].qs, 0, sizeof y[b].qs);
            std::memset(y[b].bsums, 0, sizeof y[b].bsums);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; ++j) {
            const int v = nearest_int(iscale * x[j]);
            y[b].qs[j] = static_cast<int8_t>(std::min(127, v));
        }
        for (int g = 0; g < QK_K / 16; ++g) {
            int sum = 0;
            for (int j = 0; j < 16; ++j) sum += y[b].qs[g * 16 + j];
            y[b].bsums[g] = static_cast<int16_t>(sum);
        }
        y[b].d = 1.0f / iscale;
    }
}

// Q8_0 (Q8_1) quants regrouped for vpdpbusd: see ActivationFormat::Q8_0Split
// and Q8_1Split.
template <bool WithSum>
void quantize_q8_split(const float* x, int64_t k, void* out) {
    const int64_t nb = k / QK8_0;
    const int64_t np = q8_0_split_pairs(k);
    auto* base = static_cast<uint8_t*>(out);
    auto* qs = reinterpret_cast<int8_t*>(base);
    auto* corr = reinterpret_cast<int32_t*>(base + q8_0_split_corr_offset(k));
    auto* scale = reinterpret_cast<float*>(base + q8_0_split_scale_offset(k));
    auto* sums = reinterpret_cast<float*>(base + q8_1_split_sum_offset(k));
    std::memset(out, 0, static_cast<size_t>(np) * (WithSum ? 256 : 192));
    for (int64_t b = 0; b < nb; ++b) {
        block_q8_1 blk;
        quantize_q8_0_like<true>(x + b * QK8_0, QK8_0, &blk);
        if constexpr (WithSum)
            for (int lane = 0; lane < 8; ++lane) sums[b * 8 + lane] = f16_to_f32(blk.s);
        std::memcpy(qs + b * 32, blk.qs, 32);
        for (int lane = 0; lane < 8; ++lane) {
            int sum = 0;
            for (int j = 0; j < 4; ++j) sum += blk.qs[lane * 4 + j];
            corr[b * 8 + lane] = -128 * sum;
            scale[b * 8 + lane] = f16_to_f32(blk.d);
        }
    }
}

// Q8_0 quants, scales and sums in three planes: see ActivationFormat::Q8_0Planar.
void quantize_q8_planar(const float* x, int64_t k, void* out) {
    const int64_t nb = k / QK8_0;
    auto* base = static_cast<uint8_t*>(out);
    auto* scale = reinterpret_cast<float*>(base + q8_0_planar_scale_offset(k));
    auto* sums = reinterpret_cast<int32_t*>(base + q8_0_planar_sum_offset(k));
    for (int64_t b = 0; b < nb; ++b) {
        block_q8_0 blk;
        quantize_q8_0_like<false>(x + b * QK8_0, QK8_0, &blk);
        std::memcpy(base + b * 32, blk.qs, 32);
        scale[b] = f16_to_f32(blk.d);
        int sum = 0;
        for (int8_t q : blk.qs) sum += q;
        sums[b] = sum;
    }
}

}  // namespace

size_t activation_row_bytes(ActivationFormat format, int64_t k) {
    switch (format) {
        case ActivationFormat::F32: return round_up_64(static_cast<size_t>(k) * sizeof(float));
        case ActivationFormat::Q8_0: return round_up_64(static_cast<size_t>(k / QK8_0) * sizeof(block_q8_0));
        case ActivationFormat::Q8_1: return round_up_64(static_cast<size_t>(k / QK8_1) * sizeof(block_q8_1));
        case ActivationFormat::Q8_K: return round_up_64(static_cast<size_t>(k / QK_K) * sizeof(block_q8_K));
        case ActivationFormat::Q8_0Split: return static_cast<size_t>(q8_0_split_pairs(k)) * 192;
        case ActivationFormat::Q8_1Split: return static_cast<size_t>(q8_0_split_pairs(k)) * 256;
        case ActivationFormat::Q8_0Planar: return q8_0_planar_sum_offset(k) + round_up_64(static_cast<size_t>(k / 32) * 4);
        case ActivationFormat::BF16Pairs: return round_up_64(static_cast<size_t>((k + 1) / 2) * 4);
    }
    return 0;
}

void prepare_activation_row(ActivationFormat format, const float* x, int64_t k, void* out) {
    // The AVX-512 forms write the same bytes (activation_avx512.cpp); a
    // level capped below AVX-512 (CRIA_ISA) runs the reference.
    if (cpu::best_isa() >= cpu::Isa::Avx512 && prepare_activation_row_avx512(format, x, k, out)) return;
    prepare_activation_row_scalar(format, x, k, out);
}

void prepare_activation_row_scalar(ActivationFormat format, const float* x, int64_t k, void* out) {
    switch (format) {
        case ActivationFormat::F32: std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float)); return;
        case ActivationFormat::Q8_0: quantize_q8_0_like<false>(x, k, out); return;
        case ActivationFormat::Q8_1: quantize_q8_0_like<true>(x, k, out); return;
        case ActivationFormat::Q8_K: quantize_q8_K(x, k, out); return;
        case ActivationFormat::Q8_0Split: quantize_q8_split<false>(x, k, out); return;
        case ActivationFormat::Q8_1Split: quantize_q8_split<true>(x, k, out); return;
        case ActivationFormat::Q8_0Planar: quantize_q8_planar(x, k, out); return;
        case ActivationFormat::BF16Pairs: {
            auto* h = static_cast<bf16_bits*>(out);
            for (int64_t i = 0; i < k; ++i) h[i] = f32_to_bf16(x[i]);
            if (k % 2) h[k] = 0;
            return;
        }
    }
}

ActivationFormat activation_format(ElementType t) {
    switch (t) {
        case ElementType::Q4_0:
        case ElementType::Q5_0:
        case ElementType::Q8_0:
        case ElementType::IQ4_NL:
        case ElementType::MXFP4: return ActivationFormat::Q8_0;
        case ElementType::Q4_1:
        case ElementType::Q5_1: return ActivationFormat::Q8_1;
        case ElementType::Q2_K:
        case ElementType::Q3_K:
        case ElementType::Q4_K:
        case ElementType::Q5_K:
        case ElementType::Q6_K:
        case ElementType::IQ4_XS: return ActivationFormat::Q8_K;
        default: return ActivationFormat::F32;
    }
}

}  // namespace cria::matmul::detail
