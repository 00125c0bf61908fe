#pragma once
// Turns a kernel written for compile-time tile sizes (K::run<R, C>, R <= K::MR,
// C <= K::NC) into one TileFn that serves every n_rows x n_cols tile, so the
// edge tiles of a matrix run the same code with fewer rows or columns.

#include "matmul/kernels.h"

namespace cria::matmul::detail {

template <class K, int R, int C>
inline void run_cols(const Tile& t) {
    if (t.n_cols == C) {
        K::template run<R, C>(t);
    } else if constexpr (C > 1) {
        run_cols<K, R, C - 1>(t);
    }
}

template <class K, int R>
inline void run_rows(const Tile& t) {
    if (t.n_rows == R) {
        run_cols<K, R, K::NC>(t);
    } else if constexpr (R > 1) {
        run_rows<K, R - 1>(t);
    }
}

template <class K>
void run_tile(const Tile& t) { run_rows<K, K::MR>(t); }

template <class K>
TypeKernel make_kernel(ActivationFormat act) { return {run_tile<K>, K::MR, K::NC, act}; }

}  // namespace cria::matmul::detail
