#pragma once
// The indexed product of a mixture of experts (ggml's mul_mat_id): a stack of
// n_expert weight matrices, and for every (token, slot) pair the id of the
// expert whose matrix multiplies that pair's input vector.
//
// How it runs, and why:
// - The pairs are grouped by expert (a counting sort), so each selected
//   expert's matrix is streamed once per call however many tokens chose it,
//   and an expert no token chose is never read: a decode step with 8 of 64
//   experts reads those 8 matrices only.
// - An input shared by all slots of a token (gate and up) is quantised once
//   per token, not once per expert, and copied to the columns of the experts
//   that token chose; an input per slot (down) is quantised once per pair.
// - The output tiles of all active experts form one task list, (expert, rows,
//   columns), handed out by one dispatch of the pool, so both threads stream
//   weights even when one token chose one expert.
// - Every buffer lives in a MatmulIdWorkspace that only ever grows: once it
//   has seen the largest batch, a call allocates nothing.
// - Experts may be packed (packing.h; expert e's packed matrix starts at
//   data + e * expert_stride) or in the file's rows.
// Every row of every pair is computed by the same tile kernel that matmul()
// uses for that weight type, packing and ISA, so the result equals, bit for
// bit, one matmul() per pair, and does not depend on the number of threads.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/packing.h"

namespace cria::matmul {

struct ExpertMatrices {
    ElementType type = ElementType::F32;
    const void* data = nullptr;  // expert 0's matrix (packed: its first group)
    int64_t n_expert = 0;
    int64_t rows = 0;            // output rows of each expert
    int64_t k = 0;               // values per row
    size_t row_stride = 0;       // bytes between rows (unused when packed)
    size_t expert_stride = 0;    // bytes between experts' matrices
    Packing packing = Packing::None;
};

struct MatmulIdArgs {
    ExpertMatrices w;
    // ids[t * n_used + j]: the expert of token t's slot j, in [0, n_expert).
    // An expert may appear twice for one token.
    const int32_t* ids = nullptr;
    int64_t n_used = 0;
    int64_t n_tokens = 0;
    // Input of (t, j): x + t * x_token_stride + (j % x_per_token) * x_stride
    // (floats); x_per_token is 1 (one input shared by every slot) or n_used.
    const float* x = nullptr;
    int64_t x_per_token = 1;
    int64_t x_stride = 0;
    int64_t x_token_stride = 0;
    // Output of (t, j): rows floats at y + t * y_token_stride + j * y_stride.
    float* y = nullptr;
    int64_t y_stride = 0;
    int64_t y_token_stride = 0;
};

// Scratch of matmul_id, reused across calls (not shared by concurrent calls).
class MatmulIdWorkspace {
public:
    MatmulIdWorkspace();
    ~MatmulIdWorkspace();
    MatmulIdWorkspace(const MatmulIdWorkspace&) = delete;
    MatmulIdWorkspace& operator=(const MatmulIdWorkspace&) = delete;

    // Bytes currently held (grows to the largest call seen).
    size_t bytes() const;

private:
    friend void matmul_id(const MatmulIdArgs&, MatmulIdWorkspace&, cpu::Isa, cpu::ThreadPool*);
    struct Buffers;
    std::unique_ptr<Buffers> b_;
};

// Checks the arguments (including every id) and throws cria::Error with a
// clear message when they are unusable.
void validate(const MatmulIdArgs& args);

// The indexed product with the kernels of `isa` (throws when the CPU lacks
// it) on the threads of `pool` (null: the calling thread only).
void matmul_id(const MatmulIdArgs& args, MatmulIdWorkspace& ws, cpu::Isa isa, cpu::ThreadPool* pool);
inline void matmul_id(const MatmulIdArgs& args, MatmulIdWorkspace& ws, cpu::ThreadPool* pool) {
    matmul_id(args, ws, cpu::best_isa(), pool);
}

}  // namespace cria::matmul
