#pragma once
// dst = src^T for small f32 matrices inside one task of an op (the gated
// delta rule's chunks turn token rows into columns and back): no threads.
// The SIMD version moves 8 x 8 blocks through registers (a scalar transpose
// reads or writes one value per cache line touched and was a tenth of the
// chunked delta rule's time); the scalar one is its reference.

#include <cstdint>

#include "cria/cpu/features.h"

namespace cria::ops {

struct Transpose {
    const float* src = nullptr;  // cols rows of `rows` values, ld_src floats apart
    int64_t ld_src = 0;
    float* dst = nullptr;        // rows rows of `cols` values, ld_dst floats apart
    int64_t ld_dst = 0;
    int64_t rows = 0, cols = 0;  // dst's shape
};

// With the kernels of cpu::best_isa() (AVX2 and up, or scalar).
void transpose(const Transpose& t);
// With the kernels of `isa` (for tests); levels without their own use the next lower.
void transpose(const Transpose& t, cpu::Isa isa);

void transpose_scalar(const Transpose& t);
void transpose_avx2(const Transpose& t);  // defined only on x86-64

}  // namespace cria::ops
