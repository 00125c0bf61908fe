// Matrix x matrix (prompt processing): 512 activation vectors (tokens) times
// each Llama-3.2-1B weight shape, per weight type, on 1 and 2 threads.
// Shapes are K x rows as ggml's ne0 x ne1 (see bench_matmul_vec).
// Counters: GFLOP/s = 2 * rows * K * 512 / time (10^9); peak_GFLOP/s = the
// machine's measured peak for the instruction the kernel is built on, on the
// same threads (cpu::measure_peaks): vpdpbusd zmm for quantised types (64
// multiply-adds each), vfmadd zmm for F32/F16/BF16 (16 each; BF16's
// vdpbf16ps kernel can reach twice that), each counted as 2 flops per
// multiply-add; frac_peak = the ratio.
//
//   ./bench_matmul_mat --benchmark_filter='q4_0|q8_0' --benchmark_min_time=1
//
// matmat512-levels/<type>/<shape>/packed/<isa>: the packed product at one
// instruction-set level, AMX beside VNNI for the types with an AMX kernel
// (Q4_0, Q8_0, IQ4_NL, MXFP4, Q4_K, Q6_K, IQ4_XS);
// a level the machine lacks skips with the reason (as an error line: this
// Google Benchmark has no SkipWithMessage).
//   ./bench_matmul_mat --benchmark_filter='matmat512-levels' --benchmark_min_time=1

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/core/float16.h"
#include "cria/cpu/features.h"
#include "cria/cpu/peak_probe.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"

namespace {

using cria::ElementType;

constexpr int64_t kTokens = 512;

cria::cpu::ThreadPool& pool_of(int threads) {
    static cria::cpu::ThreadPool one(1), two(2);
    return threads == 1 ? one : two;
}

void fill(ElementType t, std::vector<uint8_t>& w, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&s] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
    if (t == ElementType::F32 || t == ElementType::F16 || t == ElementType::BF16) {
        const size_t size = t == ElementType::F32 ? 4 : 2;
        for (size_t i = 0; i + size <= w.size(); i += size) {
            const float v = static_cast<float>(static_cast<int32_t>(next() & 0xFFFF) - 32768) / 32768.0f;
            if (size == 4) std::memcpy(&w[i], &v, 4);
            else {
                const uint16_t h = t == ElementType::F16 ? cria::f32_to_f16(v) : cria::f32_to_bf16(v);
                std::memcpy(&w[i], &h, 2);
            }
        }
        return;
    }
    for (size_t i = 0; i + 8 <= w.size(); i += 8) {
        uint64_t v = next() & 0x3BFF3BFF3BFF3BFFull;  // any f16 scale finite and below 1
        std::memcpy(&w[i], &v, 8);
    }
    // MXFP4's E8M0 scales: realistic exponents (no subnormal arithmetic).
    if (t == ElementType::MXFP4)
        for (size_t i = 0; i < w.size(); i += 17) w[i] = static_cast<uint8_t>(118 + next() % 12);
}

// Peak GFLOP/s of vpdpbusd (vnni = true) or vfmadd (false) on `threads`
// threads, as cria bench measures it (cpu/peak_probe.h), once per setting.
double peak(bool vnni, int threads) {
    static double measured[2][3] = {};
    double& m = measured[vnni][threads];
    if (m > 0) return m;
    const cria::cpu::PeakRates r = cria::cpu::measure_peaks(threads);
    return m = (vnni ? r.int8_ops_per_s : r.f32_ops_per_s) / 1e9;
}

void BM_MatMat(benchmark::State& state, ElementType type, int64_t k, int64_t rows, cria::matmul::Packing packing,
               std::optional<cria::cpu::Isa> level) {
    if (level && !cria::cpu::isa_supported(*level)) {
        const std::string why = *level == cria::cpu::Isa::Amx && cria::cpu::cpu_features().cpu_has_amx_tile
                                    ? "skipped: AMX present but not usable (OS state or arch_prctl permission)"
                                    : "skipped: this CPU has no " + std::string(cria::cpu::isa_name(*level));
        state.SkipWithError(why.c_str());
        for (auto _ : state) {
        }
        return;
    }
    const int threads = static_cast<int>(state.range(0));
    const bool is_float = type == ElementType::F32 || type == ElementType::F16 || type == ElementType::BF16;
    const double machine_peak = cria::cpu::isa_supported(cria::cpu::Isa::Avx512Vnni) ? peak(!is_float, threads) : 0.0;
    const size_t row_bytes = *cria::row_size_bytes(type, static_cast<uint64_t>(k));
    std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
    fill(type, w, 3);
    std::vector<float> x(static_cast<size_t>(k * kTokens)), y(static_cast<size_t>(rows * kTokens));
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    cria::matmul::MatmulArgs a;
    a.w = {type, w.data(), rows, k, row_bytes};
    std::vector<uint8_t> packed;
    if (packing != cria::matmul::Packing::None) {
        packed.resize(cria::matmul::packed_bytes(type, rows, k, packing));
        cria::matmul::pack_weights(a.w, packing, packed.data());
        a.w = {type, packed.data(), rows, k, 0, packing};
    }
    a.x = x.data();
    a.n = kTokens;
    a.x_stride = k;
    a.y = y.data();
    a.y_stride = rows;
    a.r1 = rows;
    auto& pool = pool_of(threads);
    const cria::cpu::Isa isa = level.value_or(cria::cpu::best_isa());
    for (auto _ : state) {
        cria::matmul::matmul(a, isa, &pool);
        benchmark::ClobberMemory();
    }
    const double flops = 2.0 * static_cast<double>(rows) * k * kTokens * static_cast<double>(state.iterations());
    state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
    state.counters["peak_GFLOP/s"] = machine_peak;
    if (machine_peak > 0)
        state.counters["frac_peak"] = benchmark::Counter(flops / 1e9 / machine_peak, benchmark::Counter::kIsRate);
    state.SetLabel(std::string(cria::cpu::isa_name(isa)));
}

const ElementType kTypes[] = {
    ElementType::F32,  ElementType::F16,  ElementType::BF16, ElementType::Q4_0,   ElementType::Q4_1,   ElementType::Q5_0,
    ElementType::Q5_1, ElementType::Q8_0, ElementType::Q2_K, ElementType::Q3_K,   ElementType::Q4_K,   ElementType::Q5_K,
    ElementType::Q6_K, ElementType::IQ4_NL, ElementType::IQ4_XS, ElementType::MXFP4,
};
const int64_t kShapes[][2] = {{2048, 2048}, {2048, 512}, {2048, 8192}, {8192, 2048}, {2048, 128256}};

const bool registered = [] {
    for (ElementType t : kTypes)
        for (const auto& s : kShapes) {
            const std::string name = "matmat512/" + std::string(cria::element_type_name(t)) + "/" +
                                     std::to_string(s[0]) + "x" + std::to_string(s[1]);
            benchmark::RegisterBenchmark(name.c_str(), BM_MatMat, t, s[0], s[1], cria::matmul::Packing::None,
                                         std::optional<cria::cpu::Isa>())
                ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
            // The layout the model loader packs this type into, when it packs it.
            const auto packing = cria::matmul::preferred_packing(t, cria::cpu::best_isa());
            if (packing != cria::matmul::Packing::None)
                benchmark::RegisterBenchmark((name + "/packed").c_str(), BM_MatMat, t, s[0], s[1], packing,
                                             std::optional<cria::cpu::Isa>())
                    ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
        }
    // AMX beside VNNI on the types with an AMX kernel (Rows16, >= 16 columns).
    for (ElementType t : {ElementType::Q4_0, ElementType::Q8_0, ElementType::IQ4_NL, ElementType::MXFP4, ElementType::Q4_K,
                          ElementType::Q6_K, ElementType::IQ4_XS})
        for (const auto& s : {kShapes[0], kShapes[2]})
            for (cria::cpu::Isa isa : {cria::cpu::Isa::Avx512Vnni, cria::cpu::Isa::Amx}) {
                const std::string name = "matmat512-levels/" + std::string(cria::element_type_name(t)) + "/" +
                                         std::to_string(s[0]) + "x" + std::to_string(s[1]) + "/packed/" +
                                         std::string(cria::cpu::isa_name(isa));
                benchmark::RegisterBenchmark(name.c_str(), BM_MatMat, t, s[0], s[1], cria::matmul::Packing::Rows16,
                                             std::optional<cria::cpu::Isa>(isa))
                    ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
            }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
