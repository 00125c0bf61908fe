// Lightning attention (Ops::lightning_attention) per token, on the shape of a
// MiniMax-01 lightning layer (head size 128, 64 heads):
//   BM_LightningBlocked/T     a prompt of T tokens in one call, blocked form
//   BM_LightningRecurrent/T   the same prompt in one call, recurrent form
//   BM_LightningSteps/T       T one-token calls (decoding), each on the state
//                             of another of 8 layers in turn (8 x 4 MiB: more
//                             than the last-level cache, as in a real decode)
// items_per_second is tokens per second of wall time (one layer). Threads: the
// pool's size, from CRIA_BENCH_THREADS (default 1).
//
//   ./bench_lightning_attention --benchmark_min_time=0.5

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

constexpr int64_t kD = 128, kHeads = 64, kLayers = 8;

cria::ops::CpuOps& bench_ops() {
    static const char* env = std::getenv("CRIA_BENCH_THREADS");
    static cria::cpu::ThreadPool pool(env ? std::max(1, std::atoi(env)) : 1);
    static cria::ops::CpuOps ops(pool);
    return ops;
}

struct Inputs {
    std::vector<float> q, k, v, out, rates;
    std::vector<std::vector<float>> states;
    Inputs(int64_t n_tokens, int64_t n_states) {
        std::mt19937 rng(1);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::vector<float>* x : {&q, &k, &v, &out}) {
            x->resize(static_cast<size_t>(kD * kHeads * n_tokens));
            for (float& e : *x) e = 0.1f * normal(rng);
        }
        for (int64_t h = 0; h < kHeads; ++h) rates.push_back(std::pow(2.0f, -8.0f * (h + 1) / kHeads));
        states.assign(static_cast<size_t>(n_states), std::vector<float>(static_cast<size_t>(kD * kD * kHeads), 0.0f));
    }
    void run(cria::ops::LightningForm form, int64_t t0, int64_t n, std::vector<float>& state) {
        cria::ops::LightningParams p;
        p.rates = rates.data();
        p.form = form;
        const auto rows = [&](std::vector<float>& x) {
            return TensorView::contiguous(ElementType::F32, x.data() + t0 * kD * kHeads, {kD, kHeads, n});
        };
        bench_ops().lightning_attention(rows(q), rows(k), rows(v),
                                        TensorView::contiguous(ElementType::F32, state.data(), {kD * kD, kHeads}), p,
                                        rows(out));
    }
};

void BM_LightningBlocked(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, 1);
    for (auto _ : state) in.run(cria::ops::LightningForm::Blocked, 0, n, in.states[0]);
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_LightningRecurrent(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, 1);
    for (auto _ : state) in.run(cria::ops::LightningForm::Recurrent, 0, n, in.states[0]);
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_LightningSteps(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, kLayers);
    for (auto _ : state) {
        for (int64_t t = 0; t < n; ++t)
            in.run(cria::ops::LightningForm::Recurrent, t, 1, in.states[static_cast<size_t>(t % kLayers)]);
    }
    state.SetItemsProcessed(state.iterations() * n);
}

BENCHMARK(BM_LightningBlocked)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LightningRecurrent)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LightningSteps)->Arg(48)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
