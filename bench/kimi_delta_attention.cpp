// Kimi delta attention (Ops::kimi_delta_attention) per token, on the shape
// of a Kimi-Linear-48B KDA layer (head size 128, 32 heads, a log decay per
// key channel of kimi's range):
//   BM_KdaChunked/T     a prompt of T tokens in one call, chunked form
//   BM_KdaRecurrent/T   the same prompt in one call, recurrent form
//   BM_KdaSteps/T       T one-token calls (decoding), each on the state of
//                       another of 24 layers in turn, so the state comes
//                       from memory as in a real decode step
// items_per_second is tokens per second of wall time (one layer). Threads: the pool's
// size, from CRIA_BENCH_THREADS (default 1).
//
//   ./bench_kimi_delta_attention --benchmark_min_time=0.5

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"

namespace {

using cria::ElementType;
using cria::ops::TensorView;

constexpr int64_t kD = 128, kHeads = 32, kLayers = 24;

cria::ops::CpuOps& bench_ops() {
    static const char* env = std::getenv("CRIA_BENCH_THREADS");
    static cria::cpu::ThreadPool pool(env ? std::max(1, std::atoi(env)) : 1);
    static cria::ops::CpuOps ops(pool);
    return ops;
}

struct Inputs {
    std::vector<float> q, k, v, g, beta, out;
    std::vector<std::vector<float>> states;
    explicit Inputs(int64_t n_tokens, int64_t n_states) {
        std::mt19937 rng(1);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const auto unit_rows = [&](std::vector<float>& x) {
            x.resize(static_cast<size_t>(kD * kHeads * n_tokens));
            for (size_t r = 0; r < x.size(); r += kD) {
                double norm = 0;
                for (int64_t i = 0; i < kD; ++i) norm += std::pow(x[r + i] = normal(rng), 2);
                for (int64_t i = 0; i < kD; ++i) x[r + i] /= static_cast<float>(std::sqrt(norm));
            }
        };
        unit_rows(q);
        unit_rows(k);
        v.resize(static_cast<size_t>(kD * kHeads * n_tokens));
        for (float& x : v) x = normal(rng);
        out.resize(v.size());
        g.resize(v.size());
        beta.resize(static_cast<size_t>(kHeads * n_tokens));
        for (float& x : g) x = -0.3f * std::fabs(normal(rng));
        for (float& x : beta) x = 0.5f;
        states.assign(static_cast<size_t>(n_states), std::vector<float>(static_cast<size_t>(kD * kD * kHeads), 0.0f));
    }
    void run(cria::ops::DeltaForm form, int64_t t0, int64_t n, std::vector<float>& state) {
        cria::ops::GatedDeltaParams p;
        p.scale = 1.0f / std::sqrt(static_cast<float>(kD));
        p.form = form;
        const auto heads = [&](std::vector<float>& x) {
            return TensorView::contiguous(ElementType::F32, x.data() + t0 * kD * kHeads, {kD, kHeads, n});
        };
        bench_ops().kimi_delta_attention(
            heads(q), heads(k), heads(v), heads(g),
            TensorView::contiguous(ElementType::F32, beta.data() + t0 * kHeads, {kHeads, n}),
            TensorView::contiguous(ElementType::F32, state.data(), {kD * kD, kHeads}), p, heads(out));
    }
};

void BM_KdaChunked(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, 1);
    for (auto _ : state) in.run(cria::ops::DeltaForm::Chunked, 0, n, in.states[0]);
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_KdaRecurrent(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, 1);
    for (auto _ : state) in.run(cria::ops::DeltaForm::Recurrent, 0, n, in.states[0]);
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_KdaSteps(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, kLayers);
    for (auto _ : state) {
        for (int64_t t = 0; t < n; ++t)
            in.run(cria::ops::DeltaForm::Recurrent, t, 1, in.states[static_cast<size_t>(t % kLayers)]);
    }
    state.SetItemsProcessed(state.iterations() * n);
}

BENCHMARK(BM_KdaChunked)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KdaRecurrent)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KdaSteps)->Arg(48)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
