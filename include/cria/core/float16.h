#pragma once
// IEEE half (f16) and bfloat16 conversions, bit-exact with ggml's scalar ones:
// f32 -> f16 rounds to nearest even; f32 -> bf16 rounds to nearest even and
// keeps NaNs quiet (as ggml_compute_fp32_to_bf16 does).

#include <bit>
#include <cstdint>
#include <cstring>

namespace cria {

using f16_bits = uint16_t;
using bf16_bits = uint16_t;

inline float f16_to_f32(f16_bits h) {
    // Exact conversion through the exponent-rebias trick (no tables).
    const uint32_t w = static_cast<uint32_t>(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    const uint32_t exp_offset = 0xE0u << 23;
    const float exp_scale = std::bit_cast<float>(0x7800000u);  // 2^-112
    const float normalized = std::bit_cast<float>((two_w >> 4) + exp_offset) * exp_scale;
    const uint32_t magic_mask = 126u << 23;
    const float magic_bias = 0.5f;
    const float denormalized = std::bit_cast<float>((two_w >> 17) | magic_mask) - magic_bias;
    const uint32_t denormalized_cutoff = 1u << 27;
    const uint32_t result = sign | (two_w < denormalized_cutoff ? std::bit_cast<uint32_t>(denormalized)
                                                                 : std::bit_cast<uint32_t>(normalized));
    return std::bit_cast<float>(result);
}

inline f16_bits f32_to_f16(float f) {
    const float scale_to_inf = std::bit_cast<float>(0x77800000u);   // 2^112
    const float scale_to_zero = std::bit_cast<float>(0x08800000u);  // 2^-110
    float base = (f < 0 ? -f : f) * scale_to_inf * scale_to_zero;
    const uint32_t w = std::bit_cast<uint32_t>(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = std::bit_cast<uint32_t>(base);
    const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa_bits = bits & 0x00000FFFu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return static_cast<f16_bits>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

inline float bf16_to_f32(bf16_bits h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline bf16_bits f32_to_bf16(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_bits>((u >> 16) | 64);  // quiet NaN
    return static_cast<bf16_bits>((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

}  // namespace cria
