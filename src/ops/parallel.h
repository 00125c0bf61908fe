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
    const int64_t per_thread = (n_rows + pool.size() * 4 - 1) / (pool.size() * 4);
    pool.parallel_for(n_rows, [&fn](int64_t row, int thread) { fn(row, thread); }, std::max(min_rows, per_thread));
}

}  // namespace cria::ops
