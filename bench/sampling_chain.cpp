// Cost of sampling one token from a full vocabulary row with llama.cpp's
// default chain (penalties -> dry -> top-n-sigma -> top-k 40 -> typical ->
// top-p 0.95 -> min-p 0.05 -> xtc -> temperature 0.8 -> dist), on the
// vocabulary sizes of Llama 3 (128256) and Qwen 2 (151936).
//
//   cmake --build build -t bench_sampling_chain && build/bench/bench_sampling_chain

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "cria/sampling/params.h"

namespace {

using namespace cria::sampling;

// Logits shaped like a language model's: a broad normal body and a handful
// of strong candidates on top.
std::vector<float> model_like_logits(size_t n_vocab, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> body(0.0f, 2.0f);
    std::vector<float> logits(n_vocab);
    for (float& l : logits) {
        l = body(gen);
    }
    std::uniform_int_distribution<size_t> pick(0, n_vocab - 1);
    for (int i = 0; i < 8; ++i) {
        logits[pick(gen)] = 14.0f - static_cast<float>(i);
    }
    return logits;
}

Chain default_chain(size_t n_vocab, SamplingParams params = {}) {
    params.seed = 1234;
    params.dry_sequence_breakers.clear();  // no vocabulary here; DRY is off by default anyway
    ChainContext context;
    context.n_vocab = static_cast<int32_t>(n_vocab);
    return build_chain(params, context);
}

void BM_DefaultChain(benchmark::State& state) {
    const size_t n_vocab = static_cast<size_t>(state.range(0));
    const std::vector<float> logits = model_like_logits(n_vocab, 42);
    Chain chain = default_chain(n_vocab);
    for (auto _ : state) {
        const TokenId token = chain.sample(logits);
        chain.accept(token);
        benchmark::DoNotOptimize(token);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DefaultChain)->Arg(128256)->Arg(151936)->Unit(benchmark::kMicrosecond);

// The same with the repetition penalties switched on (repeat 1.1, last 64).
void BM_DefaultChainWithPenalties(benchmark::State& state) {
    const size_t n_vocab = static_cast<size_t>(state.range(0));
    const std::vector<float> logits = model_like_logits(n_vocab, 42);
    SamplingParams params;
    params.penalty_repeat = 1.1f;
    params.penalty_freq = 0.1f;
    Chain chain = default_chain(n_vocab, params);
    for (auto _ : state) {
        const TokenId token = chain.sample(logits);
        chain.accept(token);
        benchmark::DoNotOptimize(token);
    }
}
BENCHMARK(BM_DefaultChainWithPenalties)->Arg(128256)->Arg(151936)->Unit(benchmark::kMicrosecond);

// Greedy (temperature 0): the whole chain still runs, as in llama.cpp.
void BM_GreedyOnly(benchmark::State& state) {
    const size_t n_vocab = static_cast<size_t>(state.range(0));
    const std::vector<float> logits = model_like_logits(n_vocab, 42);
    Chain chain;
    chain.add(make_greedy());
    for (auto _ : state) {
        benchmark::DoNotOptimize(chain.sample(logits));
    }
}
BENCHMARK(BM_GreedyOnly)->Arg(151936)->Unit(benchmark::kMicrosecond);

// Mirostat v2 on the full row (no top-k before it).
void BM_MirostatV2(benchmark::State& state) {
    const size_t n_vocab = static_cast<size_t>(state.range(0));
    const std::vector<float> logits = model_like_logits(n_vocab, 42);
    SamplingParams params;
    params.mirostat = 2;
    Chain chain = default_chain(n_vocab, params);
    for (auto _ : state) {
        benchmark::DoNotOptimize(chain.sample(logits));
    }
}
BENCHMARK(BM_MirostatV2)->Arg(151936)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
