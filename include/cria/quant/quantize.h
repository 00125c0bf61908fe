#pragma once
// Reference (scalar) conversion between f32 and the block formats of GGUF.
//
// These are the slow, obviously-correct versions: the byte layouts and the
// rounding/search rules follow ggml's reference quantizers, so a tensor
// quantized here is byte for byte the one llama.cpp's llama-quantize writes
// (checked against llama.cpp's own output for every type below, with and
// without imatrix; see tests/data/quant/README.md). Fast SIMD kernels live in
// the matmul module and are tested against these.
//
// Supported both ways: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, MXFP4.
//
// Every function checks its arguments: an unsupported type or a value count
// that is not a whole number of blocks throws cria::Error, never UB. Buffers
// must hold row_size_bytes(t, n) bytes (quantized side) and n floats.

#include <cstddef>
#include <cstdint>

#include "cria/core/element_type.h"

namespace cria::quant {

// Whether dequantize_row / quantize_row support type `t`.
bool can_dequantize(ElementType t);
bool can_quantize(ElementType t);

// Whether quantizing to `t` makes use of an importance matrix (imatrix).
// For the other types the `importance` argument is accepted and ignored.
bool uses_importance(ElementType t);

// Converts `n` values of type `t` at `src` to floats at `dst`.
void dequantize_row(ElementType t, const void* src, float* dst, int64_t n);

// Converts `n` floats to type `t`, writing row_size_bytes(t, n) bytes at `dst`.
// `importance`, when given, holds `n` non-negative per-column weights (the
// imatrix): the quantizer then minimises the importance-weighted squared error,
// as llama.cpp's quantize_<type>(..., quant_weights) does. nullptr selects the
// plain reference quantizer (llama.cpp's quantize_row_<type>_ref).
void quantize_row(ElementType t, const float* src, void* dst, int64_t n, const float* importance = nullptr);

// Quantizes `n_rows` consecutive rows of `n_per_row` floats each. `importance`
// (if any) holds `n_per_row` weights shared by all rows. Returns the number of
// bytes written (n_rows * row_size_bytes(t, n_per_row)).
size_t quantize_rows(ElementType t, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                     const float* importance = nullptr);

}  // namespace cria::quant
