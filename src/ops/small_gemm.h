#pragma once
// C = A B (or C += A B) for the small row-major f32 products inside one
// task of an op (the gated delta rule's chunks): no threads, no packing.
// The SIMD versions keep a tile of C in registers and broadcast A's values
// against whole rows of B (the form that needs no horizontal sums, unlike
// matmul's dot-product kernels); the scalar one is their reference.

#include <cstdint>

#include "cria/cpu/features.h"

namespace cria::ops {

struct SmallGemm {
    const float* a = nullptr;  // m rows of k values, lda floats apart (see a_transposed)
    int64_t lda = 0;
    const float* b = nullptr;  // k rows of n values, ldb floats apart
    int64_t ldb = 0;
    float* c = nullptr;        // m rows of n values, ldc floats apart
    int64_t ldc = 0;
    int64_t m = 0, n = 0, k = 0;
    bool accumulate = false;   // C += A B instead of C = A B
    // `a` holds A's transpose: k rows of m values, lda floats apart. Free for
    // these kernels (they read A one broadcast value at a time), and it saves
    // the caller a transposed copy (the gated delta rule's V^T and K^T).
    bool a_transposed = false;
    // With accumulate: C = c_scale C + A B (the decayed state plus its
    // update, in one pass over C).
    float c_scale = 1.0f;
    // With accumulate, when set: C's column j is also scaled by
    // c_col_scale[j] (n values; KDA's state decays per key channel).
    const float* c_col_scale = nullptr;
    // With accumulate, when set: C's row i is also scaled by c_row_scale[i]
    // (m values), after the other scales (the tiled attention's outputs,
    // rescaled when a row's running maximum grows).
    const float* c_row_scale = nullptr;
};

// The distance in floats between A's consecutive rows and columns.
inline int64_t a_row_step(const SmallGemm& g) { return g.a_transposed ? 1 : g.lda; }
inline int64_t a_col_step(const SmallGemm& g) { return g.a_transposed ? g.lda : 1; }

// With the kernels of cpu::best_isa() (AVX-512, AVX2 or scalar).
void small_gemm(const SmallGemm& g);
// With the kernels of `isa` (for tests); levels without their own use the next lower.
void small_gemm(const SmallGemm& g, cpu::Isa isa);

void small_gemm_scalar(const SmallGemm& g);
void small_gemm_avx2(const SmallGemm& g);    // defined only on x86-64
void small_gemm_avx512(const SmallGemm& g);

}  // namespace cria::ops
