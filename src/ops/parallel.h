#pragma once
// Splitting row-wise work over the pool: chunks big enough (about 16k values)
// that dispatch costs stay small next to the work.

#include <algorithm>
#include <cstdint>

#include "cria/cpu/thread_pool.h"

namespace cria::ops {

template <class Fn>
void for_each_row(cpu::ThreadPool& pool, int64_t n_rows, int64_t values_per_row, Fn&& fn) {
    if (n_rows <= 0) return;
    const int64_t min_rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, values_per_row));
    // 16 chunks per thread: a thread that runs out waits for at most one
    // chunk of another, 1/32 of the op at 2 threads (4 per thread left up to
    // an eighth of it); the 16k-value floor keeps a claim's cost negligible.
    const int64_t per_thread = (n_rows + pool.size() * 16 - 1) / (pool.size() * 16);
    pool.parallel_for(n_rows, [&fn](int64_t row, int thread) { fn(row, thread); }, std::max(min_rows, per_thread));
}

}  // namespace cria::ops
