// The indexed expert product (cria/matmul/matmul_id.h) on the expert shapes
// of the qwen3moe-a0.35b speed model (Qwen3-30B-A3B's proportions scaled
// down: 1024 hidden, 64 experts of width 384, 8 used per token), packed as
// the model loader packs them, on 1 and 2 threads.
//   gate_up: each expert's joined [gate; up], 768 rows of 1024 values;
//            one input per token.
//   down:    384 values -> 1024 rows; one input per (token, slot).
// tokens 1 (a decode step): each iteration routes the token to 8 random
// distinct experts of a different copy of the stack (the copies span at least
// 256 MiB, 8x the L3), so the weights come from DRAM as in real decoding.
// Counters: GB/s = bytes of the 8 active experts per second; frac_bw = that
// over the read bandwidth measured at start (read-sum, same threads).
// tokens 512 (a prompt): 8 random experts per token; GFLOP/s = 2 * rows * k
// * 4096 pairs per second.
//
//   ./bench_matmul_id --benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"
#include "cria/matmul/matmul_id.h"
#include "cria/matmul/packing.h"

namespace {

using cria::ElementType;
namespace mm = cria::matmul;

constexpr int64_t kExperts = 64, kUsed = 8;

struct FreeAligned {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Bytes = std::unique_ptr<uint8_t[], FreeAligned>;

Bytes alloc(size_t n) { return Bytes(static_cast<uint8_t*>(::operator new[](n, std::align_val_t{64}))); }

cria::cpu::ThreadPool& pool_of(int threads) {
    static cria::cpu::ThreadPool one(1), two(2);
    return threads == 1 ? one : two;
}

// Random bytes with every 16-bit word that might be a scale made finite
// (the quantised types benchmarked here), pseudo-random so that identical
// pages cannot be merged by the hypervisor.
void fill(uint8_t* p, size_t bytes, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const uint64_t v = s & 0x3BFF3BFF3BFF3BFFull;
        std::memcpy(p + i, &v, 8);
    }
}

__attribute__((target("avx2"))) float read_sum(const uint8_t* p, size_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(reinterpret_cast<const float*>(p + i)));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(reinterpret_cast<const float*>(p + i + 32)));
    }
    alignas(32) float l[8];
    _mm256_store_ps(l, _mm256_add_ps(s0, s1));
    return l[0] + l[7];
}

// Read bandwidth (GB/s) on `threads` threads, best of 4 passes over 512 MiB
// (as bench_matmul_vec and bench_membw_triad's read-sum measure it).
double read_bandwidth(int threads) {
    static double measured[3] = {0, 0, 0};
    if (measured[threads] > 0) return measured[threads];
    const size_t n = size_t{512} << 20;
    Bytes b = alloc(n);
    fill(b.get(), n, 99);
    auto& pool = pool_of(threads);
    float sums[64];
    double best = 0;
    for (int rep = 0; rep < 4; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pool.parallel_for(64, [&](int64_t c, int) { sums[c] = read_sum(b.get() + n / 64 * c, n / 64); }, 1);
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        benchmark::DoNotOptimize(sums);
        best = std::max(best, static_cast<double>(n) / sec / 1e9);
    }
    return measured[threads] = best;
}

// n_tokens routings of kUsed distinct experts each.
std::vector<int32_t> random_ids(int64_t n_tokens, std::mt19937& rng) {
    std::vector<int32_t> all(kExperts), ids;
    std::iota(all.begin(), all.end(), 0);
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::shuffle(all.begin(), all.end(), rng);
        ids.insert(ids.end(), all.begin(), all.begin() + kUsed);
    }
    return ids;
}

void BM_MatmulId(benchmark::State& state, ElementType type, int64_t k, int64_t rows, bool per_slot, int64_t n_tokens) {
    const int threads = static_cast<int>(state.range(0));
    const mm::Packing packing = mm::preferred_packing(type, cria::cpu::best_isa());
    const size_t row_bytes = *cria::row_size_bytes(type, static_cast<uint64_t>(k));
    const size_t expert_bytes = packing == mm::Packing::None ? row_bytes * static_cast<size_t>(rows)
                                                             : mm::packed_bytes(type, rows, k, packing);
    const size_t stack_bytes = expert_bytes * kExperts;
    const size_t copies = n_tokens == 1 ? std::max<size_t>(1, ((size_t{256} << 20) + stack_bytes - 1) / stack_bytes) : 1;
    const double bw = read_bandwidth(threads);
    Bytes w = alloc(stack_bytes * copies);
    {
        Bytes plain = alloc(row_bytes * static_cast<size_t>(rows));
        for (size_t e = 0; e < kExperts * copies; ++e) {
            fill(plain.get(), row_bytes * static_cast<size_t>(rows), 7 + e);
            if (packing == mm::Packing::None)
                std::memcpy(w.get() + expert_bytes * e, plain.get(), expert_bytes);
            else
                mm::pack_weights({type, plain.get(), rows, k, row_bytes}, packing, w.get() + expert_bytes * e);
        }
    }
    const int64_t x_per_token = per_slot ? kUsed : 1;
    std::vector<float> x(static_cast<size_t>(k * x_per_token * n_tokens)), y(static_cast<size_t>(rows * kUsed * n_tokens));
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    // A pool of routings to cycle through (made before timing).
    std::vector<std::vector<int32_t>> routings;
    for (int i = 0; i < 16; ++i) routings.push_back(random_ids(n_tokens, rng));

    auto& pool = pool_of(threads);
    mm::MatmulIdWorkspace ws;
    mm::MatmulIdArgs a;
    a.w = {type, nullptr, kExperts, rows, k, row_bytes, expert_bytes, packing};
    a.n_used = kUsed;
    a.n_tokens = n_tokens;
    a.x = x.data();
    a.x_per_token = x_per_token;
    a.x_stride = k;
    a.x_token_stride = k * x_per_token;
    a.y = y.data();
    a.y_stride = rows;
    a.y_token_stride = rows * kUsed;
    size_t copy = 0, routing = 0;
    for (auto _ : state) {
        a.w.data = w.get() + stack_bytes * copy;
        a.ids = routings[routing].data();
        copy = (copy + 1) % copies;
        routing = (routing + 1) % routings.size();
        mm::matmul_id(a, ws, &pool);
        benchmark::ClobberMemory();
    }
    const double iters = static_cast<double>(state.iterations());
    if (n_tokens == 1) {
        const double total = static_cast<double>(expert_bytes) * kUsed * iters;
        state.counters["GB/s"] = benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
        state.counters["frac_bw"] = benchmark::Counter(total / 1e9 / bw, benchmark::Counter::kIsRate);
        state.counters["read_bw"] = bw;
    } else {
        const double flops = 2.0 * static_cast<double>(rows * k) * static_cast<double>(kUsed * n_tokens) * iters;
        state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
    }
    state.SetLabel(std::string(cria::cpu::isa_name(cria::cpu::best_isa())) +
                   (packing == mm::Packing::None ? " plain" : " packed"));
}

const bool registered = [] {
    for (ElementType t : {ElementType::Q4_0, ElementType::Q4_K, ElementType::Q6_K, ElementType::Q8_0, ElementType::F16})
        for (int64_t tokens : {1, 512}) {
            const std::string type = std::string(cria::element_type_name(t));
            const std::string suffix = "/" + std::to_string(tokens);
            benchmark::RegisterBenchmark(("matmul_id/" + type + "/gate_up" + suffix).c_str(), BM_MatmulId, t, 1024, 768,
                                         false, tokens)
                ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
            benchmark::RegisterBenchmark(("matmul_id/" + type + "/down" + suffix).c_str(), BM_MatmulId, t, 384, 1024,
                                         true, tokens)
                ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
        }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
