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
void dequantize_bf16(const void* src, float* dst, int64_t n);
void quantize_bf16(const float* src, void* dst, int64_t n, const float* importance);

}  // namespace cria::quant::detail
