#pragma once
// Internal: the per-type reference codecs behind quantize.h, one family per
// source file. The dispatcher (quantize.cpp) validates the arguments, so each
// function may assume `n` is a positive whole number of blocks and that the
// buffers are large enough.

#include <cstdint>

namespace cria::quant::detail {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);

// float.cpp
void dequantize_f32(const void* src, float* dst, int64_t n);
void quantize_f32(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_f16(const void* src, float* dst, int64_t n);
void quantize_f16(const float* src, void* dst, int64_t n, const float* importance);
// quantize_f16 with AVX-512 (float_f16_avx512.cpp): the same bits; used
// where f16_rows_avx512_usable() (CPU and OS state, checked once).
bool f16_rows_avx512_usable();
void quantize_f16_avx512(const float* src, void* dst, int64_t n);
// The scalar quantize_f16, for the test that compares the two.
void quantize_f16_scalar(const float* src, void* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void quantize_bf16(const float* src, void* dst, int64_t n, const float* importance);

// legacy.cpp
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void quantize_q4_0(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void quantize_q4_1(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void quantize_q5_1(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q8_1(const void* src, float* dst, int64_t n);
void quantize_q8_1(const float* src, void* dst, int64_t n, const float* importance);

// k_quants.cpp
void dequantize_q2_K(const void* src, float* dst, int64_t n);
void quantize_q2_K(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q3_K(const void* src, float* dst, int64_t n);
void quantize_q3_K(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q4_K(const void* src, float* dst, int64_t n);
void quantize_q4_K(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q5_K(const void* src, float* dst, int64_t n);
void quantize_q5_K(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q6_K(const void* src, float* dst, int64_t n);
void quantize_q6_K(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_q8_K(const void* src, float* dst, int64_t n);
void quantize_q8_K(const float* src, void* dst, int64_t n, const float* importance);

// iq4.cpp
void dequantize_iq4_nl(const void* src, float* dst, int64_t n);
void quantize_iq4_nl(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_iq4_xs(const void* src, float* dst, int64_t n);
void quantize_iq4_xs(const float* src, void* dst, int64_t n, const float* importance);

// mxfp4.cpp
void dequantize_mxfp4(const void* src, float* dst, int64_t n);
void quantize_mxfp4(const float* src, void* dst, int64_t n, const float* importance);

}  // namespace cria::quant::detail
