#pragma once
// Row primitives the op kernels are built from, one table per instruction-set
// level. The scalar table is plain C++; the AVX2 and AVX-512 tables come from
// the same generic code (vec_generic.h) instantiated with 8- and 16-wide
// vector types in files compiled for those instruction sets.

#include <cstddef>
#include <cstdint>

#include "cria/cpu/features.h"

namespace cria::ops {

struct VecKernels {
    float (*dot)(const float* a, const float* b, int64_t n);
    float (*dot_f16)(const float* a, const uint16_t* b, int64_t n);   // b in IEEE half
    float (*dot_bf16)(const float* a, const uint16_t* b, int64_t n);  // b in bfloat16
    float (*sum_squares)(const float* x, int64_t n);
    float (*sum)(const float* x, int64_t n);
    float (*max)(const float* x, int64_t n);  // -inf for n == 0
    void (*scale)(const float* x, float s, float* y, int64_t n);                 // y = s * x
    void (*scale_mul)(const float* x, float s, const float* w, float* y, int64_t n);  // y = s * x * w
    void (*axpy)(float a, const float* x, float* y, int64_t n);                  // y += a * x
    void (*axpy_f16)(float a, const uint16_t* x, float* y, int64_t n);
    void (*axpy_bf16)(float a, const uint16_t* x, float* y, int64_t n);
    void (*add)(const float* a, const float* b, float* y, int64_t n);
    void (*mul)(const float* a, const float* b, float* y, int64_t n);
    // y = exp(x - shift); returns the sum of y (for softmax).
    float (*exp_shift_sum)(const float* x, float shift, float* y, int64_t n);
    void (*silu)(const float* x, float* y, int64_t n);                    // x * sigmoid(x)
    void (*swiglu)(const float* gate, const float* up, float* y, int64_t n);  // silu(gate) * up
    // GELU, tanh approximation, written as x * sigmoid(2z) with
    // z = sqrt(2/pi) (x + 0.044715 x^3): equal to 0.5 x (1 + tanh z) without
    // its cancellation for negative x.
    void (*gelu)(const float* x, float* y, int64_t n);
    void (*geglu)(const float* gate, const float* up, float* y, int64_t n);  // gelu(gate) * up
    // GELU with the exact erf: 0.5 x (1 + erf(x / sqrt 2)), a few ulp (see
    // gelu_erf_v in vec_generic.h); -inf gives -0.
    void (*gelu_erf)(const float* x, float* y, int64_t n);
    // y[0..n) += sum over j < count of p[j] * row j, the rows `stride` bytes
    // apart in f32 / f16 / bf16: attention's weighted sum of value rows, with
    // y kept in registers across the rows.
    void (*weighted_rows)(const float* p, const void* rows, size_t stride, int64_t count, float* y, int64_t n);
    void (*weighted_rows_f16)(const float* p, const void* rows, size_t stride, int64_t count, float* y, int64_t n);
    void (*weighted_rows_bf16)(const float* p, const void* rows, size_t stride, int64_t count, float* y, int64_t n);
    // out[j] = dot(q, row j) for j < count, the rows `stride` bytes apart in
    // f32 / f16 / bf16: attention's scores of one query against a block of
    // keys, with the query kept in registers.
    void (*dot_rows)(const float* q, const void* rows, size_t stride, int64_t count, float* out, int64_t n);
    void (*dot_rows_f16)(const float* q, const void* rows, size_t stride, int64_t count, float* out, int64_t n);
    void (*dot_rows_bf16)(const float* q, const void* rows, size_t stride, int64_t count, float* out, int64_t n);
    void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
    void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
    // One key block of tiled attention's online softmax, the scores stored
    // key-major: s holds `keys` rows of n values, ld floats apart, s[j][c]
    // query row c's score against key j. Each column is handled alone, in
    // vector lanes (no horizontal sums: the sums run down the key rows in
    // key order), so a column's result does not depend on its neighbours.
    // Per column c:
    //   x = s[j][c] * scale, -inf for keys j outside [lo[c], hi[c]] (only
    //     when lo and hi are given; they are key indices within the block);
    //   m = max(max[c], x over j); shift = m, or 0 while m is -inf;
    //   s[j][c] = exp(x - shift);
    //   factor[c] = exp(max[c] - shift) when m > max[c], else exactly 1;
    //   sum[c] = sum[c] * factor[c] + (s[0][c] + s[1][c] + ...); max[c] = m.
    void (*softmax_key_block)(float* s, int64_t ld, int64_t keys, int64_t n, float scale, const float* lo,
                              const float* hi, float* max, float* sum, float* factor);
};

// The table for `isa` (levels without their own table use the next lower).
const VecKernels& vec_kernels(cpu::Isa isa);
inline const VecKernels& vec_kernels() { return vec_kernels(cpu::best_isa()); }

// Defined in vec_scalar.cpp / vec_avx2.cpp / vec_avx512.cpp.
const VecKernels& vec_kernels_scalar();
const VecKernels* vec_kernels_avx2();    // nullptr when not compiled for x86
const VecKernels* vec_kernels_avx512();

}  // namespace cria::ops
