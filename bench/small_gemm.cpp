// small_gemm (the delta rules' and lightning attention's chunk products) on
// the shapes of the gated delta rule's chunk (head size 128, chunks of 32):
//   BM_SmallGemm/m/n/k/t   C (m x n) += A (m x k) B (k x n), A given as its
//                          transpose when t = 1
// with the operands in the core's cache. The GFLOP/s counter is per second
// of CPU time (one thread); compare it with the core's f32 FMA peak.
//
//   ./bench_small_gemm --benchmark_min_time=0.3

#include <benchmark/benchmark.h>

#include <vector>

#include "ops/small_gemm.h"

namespace {

void BM_SmallGemm(benchmark::State& state) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    const bool transposed = state.range(3) != 0;
    std::vector<float> a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f),
        c(static_cast<size_t>(m * n), 0.0f);
    const cria::ops::SmallGemm g{a.data(), transposed ? m : k, b.data(), n, c.data(), n, m, n, k, true, transposed,
                                 0.5f};
    for (auto _ : state) {
        cria::ops::small_gemm(g);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(static_cast<double>(2 * m * n * k) * static_cast<double>(state.iterations()) / 1e9,
                           benchmark::Counter::kIsRate);
}

// S [Q~^T | W^T], the state update, U^T / W^T (A transposed), k.k stripes, a 16-column tail.
BENCHMARK(BM_SmallGemm)
    ->Args({128, 64, 128, 0})
    ->Args({128, 128, 32, 0})
    ->Args({128, 32, 32, 1})
    ->Args({16, 32, 128, 0})
    ->Args({128, 16, 16, 1});

}  // namespace

BENCHMARK_MAIN();
