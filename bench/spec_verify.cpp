// Speculative decoding benchmarks:
//   BM_VerifyBatch/k   one target decode of k tokens after a 128-token context,
//                      on CRIA_SPEC_MODEL (default: a small synthetic llama
//                      written to the temp dir). Divide by k = 1 for the
//                      relative cost of a verify batch, which is what makes
//                      speculation pay on memory-bound models.
//   BM_NgramDraft/...  one draft() call of each n-gram drafter on a 4096-token
//                      repetitive history: the overhead drafting adds per step.
//
//   bench_spec_verify --make-model /tmp/cria-spec/llama-1b-q4_0.gguf   (Llama-3.2-1B shapes, Q4_0)
//   CRIA_SPEC_MODEL=/tmp/cria-spec/llama-1b-q4_0.gguf bench_spec_verify --benchmark_filter=Verify

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "cria/spec/ngram.h"
#include "cria/spec/ngram_cache.h"

namespace {

using namespace cria;

const std::string& model_path() {
    static const std::string path = [] {
        if (const char* env = std::getenv("CRIA_SPEC_MODEL")) return std::string(env);
        const std::string p = (std::filesystem::temp_directory_path() / "cria-bench-spec-small.gguf").string();
        if (!std::filesystem::exists(p)) {
            auto spec = model::SyntheticModelSpec::tiny("llama");
            spec.n_embd = 256;
            spec.n_ff = 768;
            spec.n_layer = 4;
            spec.n_head = 8;
            spec.n_head_kv = 4;
            spec.head_dim = 32;
            spec.n_vocab = 4096;
            model::write_synthetic_model(spec, p);
        }
        return p;
    }();
    return path;
}

void BM_VerifyBatch(benchmark::State& state) {
    static const auto model = model::Model::load(model_path());
    runtime::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    runtime::Context ctx(*model, cp);
    const int context = 128, k = static_cast<int>(state.range(0));
    std::vector<runtime::TokenId> prompt(context);
    for (int i = 0; i < context; ++i) prompt[static_cast<size_t>(i)] = 1 + (i * 7) % 100;
    ctx.decode(runtime::Batch::from_tokens(prompt, 0));
    runtime::Batch b;
    for (int i = 0; i < k; ++i) b.add(5 + i, context + i, {0}, true);
    for (auto _ : state) {
        ctx.decode(b);
        state.PauseTiming();
        if (!ctx.memory_seq_rm(0, context, -1)) {  // a KV cache always can; a recurrent one cannot
            state.SkipWithError("the target's memory cannot drop the verified tokens");
            break;
        }
        state.ResumeTiming();
    }
    state.counters["ms/token"] =
        benchmark::Counter(static_cast<double>(state.iterations() * k), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_VerifyBatch)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

std::vector<spec::TokenId> repetitive_history(size_t n) {
    std::vector<spec::TokenId> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = static_cast<spec::TokenId>((i * 31 + (i / 97) * 7) % 500);
    return h;
}

template <typename Make>
void run_drafter(benchmark::State& state, Make make) {
    const auto history = repetitive_history(4096);
    auto drafter = make();
    const sampling::SamplingParams greedy;
    drafter->begin(spec::BeginInput{history, greedy});
    const spec::DraftInput input{history, history[history.size() - 97], static_cast<int32_t>(history.size())};
    spec::Draft out;
    for (auto _ : state) {
        out.clear();
        drafter->draft(input, 16, out);
        benchmark::DoNotOptimize(out.tokens.data());
    }
}

void BM_NgramDraft_Simple(benchmark::State& s) {
    run_drafter(s, [] { return std::make_unique<spec::NgramSimpleDrafter>(spec::NgramParams{12, 48, 1}); });
}
void BM_NgramDraft_MapK(benchmark::State& s) {
    run_drafter(s, [] { return std::make_unique<spec::NgramMapDrafter>(spec::NgramParams{12, 48, 1}, true); });
}
void BM_NgramDraft_MapK4v(benchmark::State& s) {
    run_drafter(s, [] { return std::make_unique<spec::NgramMapDrafter>(spec::NgramParams{12, 48, 1}, false); });
}
void BM_NgramDraft_Mod(benchmark::State& s) {
    run_drafter(s, [] {
        return std::make_unique<spec::NgramModDrafter>(spec::NgramModParams{24, 1, 64},
                                                       std::make_shared<spec::NgramModPool>(24, size_t{4} << 20));
    });
}
void BM_NgramDraft_Cache(benchmark::State& s) {
    run_drafter(s, [] { return std::make_unique<spec::NgramCacheDrafter>(spec::NgramCacheParams{8, "", ""}); });
}
BENCHMARK(BM_NgramDraft_Simple)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NgramDraft_MapK)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NgramDraft_MapK4v)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NgramDraft_Mod)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NgramDraft_Cache)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--make-model") == 0) {
        std::filesystem::create_directories(std::filesystem::path(argv[2]).parent_path());
        model::write_synthetic_model(model::SyntheticModelSpec::llama_1b(ElementType::Q4_0), argv[2]);
        return 0;
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
