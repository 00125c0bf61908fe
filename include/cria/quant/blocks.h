#pragma once
// Block layouts of the quantized GGUF element types, byte for byte as ggml
// defines them (ggml-common.h). Each struct is one block; the static_asserts
// pin the sizes that element_type.cpp also states.

#include <cstdint>

#include "cria/core/float16.h"

namespace cria::quant {

inline constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
inline constexpr int QK_K = 256;       // super-block of K-quants and i-quants
inline constexpr int K_SCALE_SIZE = 12;
inline constexpr int QK4_NL = 32;
inline constexpr int QK_MXFP4 = 32;

struct block_q4_0 { f16_bits d; uint8_t qs[QK4_0 / 2]; };
struct block_q4_1 { f16_bits d; f16_bits m; uint8_t qs[QK4_1 / 2]; };
struct block_q5_0 { f16_bits d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
struct block_q5_1 { f16_bits d; f16_bits m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
struct block_q8_0 { f16_bits d; int8_t qs[QK8_0]; };
struct block_q8_1 { f16_bits d; f16_bits s; int8_t qs[QK8_1]; };  // s = d * sum(qs)

// 2-bit: 16 sub-blocks of 16, 4-bit scales and mins.
struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; f16_bits d; f16_bits dmin; };
// 3-bit: high bits in hmask, 6-bit scales packed in 12 bytes.
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; f16_bits d; };
// 4-bit: 8 sub-blocks of 32, 6-bit scales and mins packed in 12 bytes.
struct block_q4_K { f16_bits d; f16_bits dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct block_q5_K { f16_bits d; f16_bits dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// 6-bit: 16 sub-blocks of 16, 8-bit signed scales.
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; f16_bits d; };
// 8-bit intermediate for K-quant dot products (activations only).
struct block_q8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

struct block_iq4_nl { f16_bits d; uint8_t qs[QK4_NL / 2]; };
struct block_iq4_xs { f16_bits d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
// MXFP4: shared E8M0 exponent, 32 FP4 (E2M1) values.
struct block_mxfp4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q2_K) == 84);
static_assert(sizeof(block_q3_K) == 110);
static_assert(sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210);
static_assert(sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_iq4_xs) == 136);
static_assert(sizeof(block_mxfp4) == 17);

// Non-linear 4-bit code book of IQ4_NL and IQ4_XS.
inline constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// E2M1 values doubled (ggml's kvalues_mxfp4), paired with a halved E8M0 scale.
inline constexpr int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace cria::quant
