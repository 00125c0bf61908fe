// Matrix x vector (one token) per weight type, on the weight shapes of
// Llama-3.2-1B, on 1 and 2 threads. Shapes are named K x rows as ggml names a
// weight's ne0 x ne1: "2048x8192" is ffn_up, 8192 rows of 2048 values.
// Every iteration multiplies a different copy of the weights (the copies
// together span at least 256 MiB, 8x the 32 MiB L3), so the weights always
// come from DRAM, as in real decoding.
// Counters: GB/s = weight bytes read per second (10^9); frac_bw = that over
// the read bandwidth this program measures at start (read-sum, same threads).
//
//   ./bench_matmul_vec --benchmark_filter='q4_0|q8_0|q4_K|f16' --benchmark_min_time=1

#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/core/float16.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"

namespace {

using cria::ElementType;

struct FreeAligned {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Bytes = std::unique_ptr<uint8_t[], FreeAligned>;

Bytes alloc(size_t n) { return Bytes(static_cast<uint8_t*>(::operator new[](n, std::align_val_t{64}))); }

cria::cpu::ThreadPool& pool_of(int threads) {
    static cria::cpu::ThreadPool one(1), two(2);
    return threads == 1 ? one : two;
}

// Plausible weights: float types get values in [-1, 1]; block types random
// bytes (quants) with every 16-bit word that might be a scale made finite.
void fill(ElementType t, uint8_t* p, size_t bytes, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&s] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
    if (t == ElementType::F32) {
        for (size_t i = 0; i + 4 <= bytes; i += 4) {
            float v = static_cast<float>(static_cast<int32_t>(next() & 0xFFFF) - 32768) / 32768.0f;
            std::memcpy(p + i, &v, 4);
        }
        return;
    }
    if (t == ElementType::F16 || t == ElementType::BF16) {
        for (size_t i = 0; i + 2 <= bytes; i += 2) {
            const float v = static_cast<float>(static_cast<int32_t>(next() & 0xFFFF) - 32768) / 32768.0f;
            const uint16_t h = t == ElementType::F16 ? cria::f32_to_f16(v) : cria::f32_to_bf16(v);
            std::memcpy(p + i, &h, 2);
        }
        return;
    }
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t v = next() & 0x3BFF3BFF3BFF3BFFull;  // every f16 lane finite and below 1
        std::memcpy(p + i, &v, 8);
    }
    // MXFP4's E8M0 scales: realistic exponents (tiny ones would make the
    // float arithmetic run on subnormals, which real weights never do).
    if (t == ElementType::MXFP4)
        for (size_t i = 0; i < bytes; i += 17) p[i] = static_cast<uint8_t>(118 + next() % 12);
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

// Read bandwidth (GB/s) of this machine on `threads` threads, measured once.
double read_bandwidth(int threads) {
    static double measured[3] = {0, 0, 0};
    if (measured[threads] > 0) return measured[threads];
    const size_t n = size_t{512} << 20;
    Bytes b = alloc(n);
    // Pseudo-random bytes: identical pages could be merged by the hypervisor
    // (KSM) and read from cache.
    fill(ElementType::I8, b.get(), n, 99);
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

void BM_MatVec(benchmark::State& state, ElementType type, int64_t k, int64_t rows, cria::matmul::Packing packing) {
    const int threads = static_cast<int>(state.range(0));
    const size_t row_bytes = *cria::row_size_bytes(type, static_cast<uint64_t>(k));
    const size_t matrix_bytes = packing == cria::matmul::Packing::None
                                    ? row_bytes * static_cast<size_t>(rows)
                                    : cria::matmul::packed_bytes(type, rows, k, packing);
    const size_t copies = std::max<size_t>(1, ((size_t{256} << 20) + matrix_bytes - 1) / matrix_bytes);
    const double bw = read_bandwidth(threads);
    Bytes w = alloc(matrix_bytes * copies);
    fill(type, w.get(), matrix_bytes * copies, 7);
    if (packing != cria::matmul::Packing::None) {
        // Pack each copy (its plain rows take the same bytes as its packed form).
        Bytes plain = alloc(row_bytes * static_cast<size_t>(rows));
        for (size_t c = 0; c < copies; ++c) {
            std::memcpy(plain.get(), w.get() + matrix_bytes * c, row_bytes * static_cast<size_t>(rows));
            cria::matmul::pack_weights({type, plain.get(), rows, k, row_bytes}, packing, w.get() + matrix_bytes * c);
        }
    }
    std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(rows));
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    auto& pool = pool_of(threads);
    cria::matmul::MatmulArgs a;
    a.w = {type, nullptr, rows, k, row_bytes, packing};
    a.x = x.data();
    a.y = y.data();
    a.r1 = rows;
    size_t copy = 0;
    for (auto _ : state) {
        a.w.data = w.get() + matrix_bytes * copy;
        copy = (copy + 1) % copies;
        cria::matmul::matmul(a, pool);
        benchmark::ClobberMemory();
    }
    const double total = static_cast<double>(matrix_bytes) * static_cast<double>(state.iterations());
    state.counters["GB/s"] = benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
    state.counters["frac_bw"] = benchmark::Counter(total / 1e9 / bw, benchmark::Counter::kIsRate);
    state.counters["read_bw"] = bw;
    state.SetLabel(std::string(cria::cpu::isa_name(cria::cpu::best_isa())));
}

const ElementType kTypes[] = {
    ElementType::F32,  ElementType::F16,  ElementType::BF16, ElementType::Q4_0,   ElementType::Q4_1,   ElementType::Q5_0,
    ElementType::Q5_1, ElementType::Q8_0, ElementType::Q2_K, ElementType::Q3_K,   ElementType::Q4_K,   ElementType::Q5_K,
    ElementType::Q6_K, ElementType::IQ4_NL, ElementType::IQ4_XS, ElementType::MXFP4,
};
// K x rows, as ggml's ne0 x ne1 of the Llama-3.2-1B weights.
const int64_t kShapes[][2] = {{2048, 2048}, {2048, 512}, {2048, 8192}, {8192, 2048}, {2048, 128256},
                              // Qwen3-0.6B: attn_q, attn_k/v, attn_output, ffn_gate/up, ffn_down, output.
                              {1024, 2048}, {1024, 1024}, {2048, 1024}, {1024, 3072}, {3072, 1024}, {1024, 151936}};

const bool registered = [] {
    for (ElementType t : kTypes)
        for (const auto& s : kShapes) {
            const std::string name = "matvec/" + std::string(cria::element_type_name(t)) + "/" +
                                     std::to_string(s[0]) + "x" + std::to_string(s[1]);
            benchmark::RegisterBenchmark(name.c_str(), BM_MatVec, t, s[0], s[1], cria::matmul::Packing::None)
                ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
            // The layout the model loader packs this type into, when it packs it.
            const auto packing = cria::matmul::preferred_packing(t, cria::cpu::best_isa());
            if (packing != cria::matmul::Packing::None)
                benchmark::RegisterBenchmark((name + "/packed").c_str(), BM_MatVec, t, s[0], s[1], packing)
                    ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
        }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
