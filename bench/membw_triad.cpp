// The machine's memory bandwidth, the roofline of matrix x vector: a
// STREAM-like triad (a[i] = b[i] + s * c[i]) and a vectorised read-only sum,
// over 512 MiB in all (far beyond the last-level cache), on 1 and 2 threads.
// Reported in GB/s (10^9 bytes): triad counts 3 arrays (2 read, 1 written,
// STREAM's convention, which ignores the write-allocate read); the read-sum
// counts the bytes read.
//
//   ./bench_membw_triad --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "cria/cpu/features.h"
#include "cria/cpu/peak_probe.h"
#include "cria/cpu/thread_pool.h"

namespace {

constexpr size_t kTotalBytes = size_t{512} << 20;

struct FreeAligned {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Buffer = std::unique_ptr<float[], FreeAligned>;

// Pseudo-random contents: a hypervisor that merges identical pages (KSM)
// would otherwise back a periodic buffer with a few physical pages, and the
// "memory" bandwidth would be a cache bandwidth.
Buffer make_buffer(size_t floats, float value) {
    Buffer b(static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t{64})));
    uint64_t s = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(value * 1000.0f + 1.0f);
    for (size_t i = 0; i < floats; ++i) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        b[i] = value + static_cast<float>(s & 0xFFFF) / 65536.0f;
    }
    return b;
}

cria::cpu::ThreadPool& pool_of(int threads) {
    static cria::cpu::ThreadPool one(1), two(2);
    return threads == 1 ? one : two;
}

void BM_Triad(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    const size_t n = kTotalBytes / 3 / sizeof(float) / 1024 * 1024;
    Buffer a = make_buffer(n, 0.0f), b = make_buffer(n, 1.0f), c = make_buffer(n, 2.0f);
    auto& pool = pool_of(threads);
    const int64_t chunks = 64;
    const float s = 3.0f;
    for (auto _ : state) {
        pool.parallel_for(chunks, [&](int64_t chunk, int) {
            const size_t begin = n / chunks * static_cast<size_t>(chunk), end = begin + n / chunks;
            float* __restrict pa = a.get();
            const float* __restrict pb = b.get();
            const float* __restrict pc = c.get();
            for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + s * pc[i];
        }, 1);
        benchmark::ClobberMemory();
    }
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(3 * n * sizeof(float)) * state.iterations() / 1e9,
                                                benchmark::Counter::kIsRate);
}

__attribute__((target("avx2"))) float read_sum(const float* p, size_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
    }
    const __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    float t = 0;
    for (float v : lanes) t += v;
    return t;
}

void BM_ReadSum(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    const size_t n = kTotalBytes / sizeof(float);
    Buffer a = make_buffer(n, 1.0f);
    auto& pool = pool_of(threads);
    const int64_t chunks = 64;
    float sums[64];
    for (auto _ : state) {
        pool.parallel_for(chunks, [&](int64_t chunk, int) {
            const size_t begin = n / chunks * static_cast<size_t>(chunk);
            sums[chunk] = read_sum(a.get() + begin, n / chunks);
        }, 1);
        benchmark::DoNotOptimize(sums);
    }
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(n * sizeof(float)) * state.iterations() / 1e9,
                                                benchmark::Counter::kIsRate);
}

// The read probe cria bench prints (cpu::measure_read_bandwidth, 256 MiB,
// best of 5 passes), once per iteration: its spread over the repetitions is
// the probe's repeatability, and its level should match BM_ReadSum's.
void BM_PeakProbeRead(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    double rate = 0;
    for (auto _ : state) rate = cria::cpu::measure_read_bandwidth(threads, size_t{256} << 20, 5);
    state.counters["GB/s"] = rate / 1e9;
}

}  // namespace

BENCHMARK(BM_PeakProbeRead)->Arg(1)->Arg(2)->Iterations(1)->Repetitions(6)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Triad)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_ReadSum)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

BENCHMARK_MAIN();
