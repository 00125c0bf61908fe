// Decode speed of the runtime on synthetic models, and the maker of the
// benchmark-sized model files.
//
//   bench_runtime_decode                         Google Benchmark: pp/tg on a small llama
//   CRIA_BENCH_MODEL=F bench_runtime_decode      also tg128 of file F (BM_GenerateFile)
//   bench_runtime_decode --make-models DIR [NAME...]  writes llama-1b-{f16,q4_0,q8_0,q4_k_m}.gguf
//                                                qwen3-0.6b-q4_0.gguf and qwen35-hybrid-q4_0.gguf
//                                                (a Qwen3.5-style hybrid; random weights, real
//                                                shapes, llama-quantize's type mix: see
//                                                speed_models.h) into DIR for `cria bench`.
//                                                The files are never committed.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "speed_models.h"

namespace {

using namespace cria;

const std::string& small_model_path() {
    static const std::string path = [] {
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("llama");
        spec.n_embd = 512;
        spec.n_head = 8;
        spec.n_head_kv = 4;
        spec.head_dim = 64;
        spec.n_ff = 1536;
        spec.n_layer = 4;
        spec.n_vocab = 4096;
        spec.weight_type = ElementType::Q4_0;
        spec.embd_type = ElementType::Q4_0;
        const std::string p = (std::filesystem::temp_directory_path() / "cria-bench-runtime-small.gguf").string();
        model::write_synthetic_model(spec, p);
        return p;
    }();
    return path;
}

void BM_Prompt(benchmark::State& state) {
    auto m = model::Model::load(small_model_path());
    runtime::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = static_cast<int>(state.range(1));
    runtime::Context ctx(*m, cp);
    const auto n = static_cast<int32_t>(state.range(0));
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    std::mt19937 rng(1);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % m->hparams().n_vocab);
    const runtime::Batch b = runtime::Batch::from_tokens(tokens, 0);
    for (auto _ : state) {
        ctx.memory_clear();
        ctx.decode(b);
    }
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Prompt)->Args({128, 1})->Args({128, 2})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Generate(benchmark::State& state) {
    auto m = model::Model::load(small_model_path());
    runtime::ContextParams cp;
    cp.n_ctx = 1024;
    cp.n_threads = static_cast<int>(state.range(0));
    runtime::Context ctx(*m, cp);
    runtime::Batch b;
    int32_t pos = 0;
    for (auto _ : state) {
        if (pos >= 1000) {
            ctx.memory_clear();
            pos = 0;
        }
        b.clear();
        b.add(pos % 100, pos, {0}, true);
        ++pos;
        ctx.decode(b);
    }
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Generate)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// A server's decode step: range(0) sequences, each with a 256-token prompt
// of its own, generate together (one token of each per decode() call), as
// cria serve's slots do. Where the cache puts those tokens decides whether
// attention reads each sequence in place or gathers its cells first. The
// counter is tokens per second; on 1 thread the CPU column is the step's CPU time.
void BM_GenerateSequences(benchmark::State& state) {
    auto m = model::Model::load(small_model_path());
    const auto n_seq = static_cast<int32_t>(state.range(0));
    runtime::ContextParams cp;
    cp.n_ctx = 4096;
    cp.n_seq_max = static_cast<uint32_t>(n_seq);
    cp.n_threads = static_cast<int>(state.range(1));
    runtime::Context ctx(*m, cp);
    constexpr int32_t kPrompt = 256, kSteps = 192;
    runtime::Batch b;
    int32_t pos = kPrompt;
    for (auto _ : state) {
        if (pos == kPrompt + kSteps || pos == kPrompt) {
            state.PauseTiming();
            ctx.memory_clear();
            for (int32_t s = 0; s < n_seq; ++s) {
                b.clear();
                for (int32_t p = 0; p < kPrompt; ++p) b.add((p * 7 + s) % 100, p, {s}, p + 1 == kPrompt);
                ctx.decode(b);
            }
            pos = kPrompt;
            state.ResumeTiming();
        }
        b.clear();
        for (int32_t s = 0; s < n_seq; ++s) b.add((pos + s) % 100, pos, {s}, true);
        ++pos;
        ctx.decode(b);
    }
    state.counters["tok/s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * n_seq), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GenerateSequences)->Args({1, 1})->Args({4, 1})->Unit(benchmark::kMillisecond);

// tg128 of a model file (CRIA_BENCH_MODEL=path, e.g. a speed model): one
// token per iteration at positions 0..127, then the cache is cleared, as
// `cria bench -n 128` generates. On 1 thread the CPU column is the CPU time
// per token, which another process on the machine does not inflate the way
// it does the wall time (only through the memory bus and caches).
void BM_GenerateFile(benchmark::State& state, const std::string& path) {
    static std::unique_ptr<model::Model> m;
    static std::string loaded;
    if (loaded != path) m = model::Model::load(path), loaded = path;
    runtime::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = static_cast<int>(state.range(0));
    runtime::Context ctx(*m, cp);
    runtime::Batch b;
    int32_t pos = 0;
    for (auto _ : state) {
        if (pos == 128) {
            state.PauseTiming();
            ctx.memory_clear();
            pos = 0;
            state.ResumeTiming();
        }
        b.clear();
        b.add(pos % 100, pos, {0}, true);
        ++pos;
        ctx.decode(b);
    }
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
const bool file_benchmark_registered = [] {
    if (const char* path = std::getenv("CRIA_BENCH_MODEL"))
        benchmark::RegisterBenchmark("BM_GenerateFile", BM_GenerateFile, std::string(path))
            ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(128);
    return true;
}();

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 3 && std::strcmp(argv[1], "--make-models") == 0) {
        // Optional names after DIR select files (e.g. qwen3-0.6b-q4_0.gguf).
        cria::bench::make_speed_models(argv[2], std::vector<std::string>(argv + 3, argv + argc), 0);
        return 0;
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
