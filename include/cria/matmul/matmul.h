#pragma once
// Matrix x vector and matrix x matrix products of a weight matrix with f32
// activations, for every weight type cria runs models with.
//
// Conventions (the same as ggml's mul_mat with src0 = W, src1 = x):
//   W has `rows` rows of `k` values each (ggml ne0 = k, ne1 = rows); row r
//     starts at `data + r * row_stride` bytes and is stored in `type`.
//   x holds `n` activation vectors of `k` floats; vector j starts at
//     x + j * x_stride (floats).
//   y receives y[j * y_stride + r] = dot(W row r, x vector j) for r in
//     [r0, r1) and j in [0, n). Rows outside [r0, r1) are left untouched, so
//     callers may split the rows of one product between several calls.
// "rows x K" in benchmark names means exactly this: 8192x2048 is a weight with
// 8192 rows of 2048 values (an up-projection from 2048 to 8192 features).
//
// Quantised weights are multiplied with activations quantised on the fly to
// 8-bit blocks, paired as ggml pairs them (its vec_dot_type): Q8_0 for
// Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4, Q8_1 (Q8_0 plus block sums) for Q4_1/Q5_1, and
// Q8_K for the K-quants and IQ4_XS. F32/F16/BF16 weights use f32 activations.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cria/core/element_type.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/packing.h"

namespace cria::matmul {

// Kernels are chosen by the cria_cpu instruction-set level (cpu::best_isa(),
// which CRIA_ISA can lower): Scalar -> portable reference, Avx2 and Avx512 ->
// AVX2/FMA/F16C kernels, Avx512Vnni and Amx -> AVX-512 kernels with vpdpbusd.
// (No AMX kernels exist yet: an AMX machine runs the VNNI ones.)
// A type without a kernel at some level uses the next lower level's kernel:
//   Avx512Vnni: every type (F32/F16/BF16 with FMA; all quantised with vpdpbusd)
//   Avx2:       every type (quantised with vpmaddubsw)
// All levels give the same results up to float rounding of the block sums
// (the integer block dot products are exact everywhere); see tests/matmul.
using cpu::Isa;

struct WeightMatrix {
    ElementType type = ElementType::F32;
    const void* data = nullptr;  // row 0 (packed: the first group)
    int64_t rows = 0;
    int64_t k = 0;               // values per row
    size_t row_stride = 0;       // bytes from one row to the next (unused when packed)
    Packing packing = Packing::None;  // see packing.h; packed products must start at a group (r0)
};

struct MatmulArgs {
    WeightMatrix w;
    const float* x = nullptr;
    int64_t n = 1;         // number of activation vectors (1 = matrix x vector)
    int64_t x_stride = 0;  // floats between activation vectors (>= k when n > 1)
    float* y = nullptr;
    int64_t y_stride = 0;  // floats between output vectors (>= r1 when n > 1)
    int64_t r0 = 0;        // first output row to compute
    int64_t r1 = 0;        // one past the last output row to compute
    // When set, activation vector j is combine(x + j x_stride, x2 + j x_stride,
    // row, k), computed into a scratch row just before it is quantised: an
    // element-wise step (a gated activation) fused into the product that reads
    // it, so its output is never written out and read back. The values are
    // those of running combine over the rows first, bit for bit.
    void (*combine)(const float* a, const float* b, float* y, int64_t n) = nullptr;
    const float* x2 = nullptr;  // combine's second input, with x's stride
};

// Whether weights of type `t` can be multiplied (and with which k: quantised
// types need a whole number of blocks per row).
bool supports_weight_type(ElementType t);

// Checks the arguments (types, sizes, strides) and throws cria::Error with a
// clear message when they are unusable.
void validate(const MatmulArgs& args);

// y = W x on the calling thread only, with the kernels of cpu::best_isa().
void matmul(const MatmulArgs& args);
// y = W x on every thread of `pool`.
void matmul(const MatmulArgs& args, cpu::ThreadPool& pool);
// The same with the kernels of level `isa` (throws when the CPU lacks it);
// pool may be null (calling thread only). For tests and benchmarks.
void matmul(const MatmulArgs& args, Isa isa, cpu::ThreadPool* pool);

// Work split for callers that run their own parallel loop. Phase 1 quantises
// the activations (quantize_tasks() independent tasks), phase 2 computes the
// output tiles (compute_tasks() independent tasks); every task of phase 1 must
// finish before any task of phase 2 starts. The split depends only on the
// problem, never on the number of threads, so results are bit-identical
// however many threads run the tasks.
class MatmulPlan {
public:
    MatmulPlan(const MatmulArgs& args, Isa isa);
    explicit MatmulPlan(const MatmulArgs& args) : MatmulPlan(args, cpu::best_isa()) {}
    ~MatmulPlan();
    MatmulPlan(const MatmulPlan&) = delete;
    MatmulPlan& operator=(const MatmulPlan&) = delete;

    int64_t quantize_tasks() const;
    void run_quantize_task(int64_t task);
    int64_t compute_tasks() const;
    void run_compute_task(int64_t task);

private:
    struct Impl;
    Impl* impl_;
};

}  // namespace cria::matmul
