// The gated delta rule (Ops::gated_delta_net) per token, on the shape of a
// Qwen3.5 delta-net layer (head size 128, 16 key heads, 32 value heads):
//   BM_DeltaChunked/T     a prompt of T tokens in one call, chunked form
//   BM_DeltaRecurrent/T   the same prompt in one call, recurrent form
//   BM_DeltaSteps/T       T one-token calls (decoding), each on the state of
//                         another of 24 layers in turn, so the state comes
//                         from memory as in a real decode step (24 x 2 MiB
//                         is more than the last-level cache)
// items_per_second is tokens per second of wall time (one layer). Threads: the pool's
// size, from CRIA_BENCH_THREADS (default 1).
//
//   ./bench_gated_delta_net --benchmark_min_time=0.5

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

constexpr int64_t kD = 128, kKeyHeads = 16, kValueHeads = 32, kLayers = 24;

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
            x.resize(static_cast<size_t>(kD * kKeyHeads * n_tokens));
            for (size_t r = 0; r < x.size(); r += kD) {
                double norm = 0;
                for (int64_t i = 0; i < kD; ++i) norm += std::pow(x[r + i] = normal(rng), 2);
                for (int64_t i = 0; i < kD; ++i) x[r + i] /= static_cast<float>(std::sqrt(norm));
            }
        };
        unit_rows(q);
        unit_rows(k);
        v.resize(static_cast<size_t>(kD * kValueHeads * n_tokens));
        for (float& x : v) x = normal(rng);
        out.resize(v.size());
        g.resize(static_cast<size_t>(kValueHeads * n_tokens));
        beta.resize(g.size());
        for (float& x : g) x = -0.1f * std::fabs(normal(rng));
        for (float& x : beta) x = 0.5f;
        states.assign(static_cast<size_t>(n_states), std::vector<float>(static_cast<size_t>(kD * kD * kValueHeads), 0.0f));
    }
    void run(cria::ops::DeltaForm form, int64_t t0, int64_t n, std::vector<float>& state) {
        cria::ops::GatedDeltaParams p;
        p.scale = 1.0f / std::sqrt(static_cast<float>(kD));
        p.form = form;
        bench_ops().gated_delta_net(
            TensorView::contiguous(ElementType::F32, q.data() + t0 * kD * kKeyHeads, {kD, kKeyHeads, n}),
            TensorView::contiguous(ElementType::F32, k.data() + t0 * kD * kKeyHeads, {kD, kKeyHeads, n}),
            TensorView::contiguous(ElementType::F32, v.data() + t0 * kD * kValueHeads, {kD, kValueHeads, n}),
            TensorView::contiguous(ElementType::F32, g.data() + t0 * kValueHeads, {kValueHeads, n}),
            TensorView::contiguous(ElementType::F32, beta.data() + t0 * kValueHeads, {kValueHeads, n}),
            TensorView::contiguous(ElementType::F32, state.data(), {kD * kD, kValueHeads}), p,
            TensorView::contiguous(ElementType::F32, out.data() + t0 * kD * kValueHeads, {kD, kValueHeads, n}));
    }
};

void BM_DeltaChunked(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, 1);
    for (auto _ : state) in.run(cria::ops::DeltaForm::Chunked, 0, n, in.states[0]);
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_DeltaRecurrent(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, 1);
    for (auto _ : state) in.run(cria::ops::DeltaForm::Recurrent, 0, n, in.states[0]);
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_DeltaSteps(benchmark::State& state) {
    const int64_t n = state.range(0);
    Inputs in(n, kLayers);
    for (auto _ : state) {
        for (int64_t t = 0; t < n; ++t)
            in.run(cria::ops::DeltaForm::Recurrent, t, 1, in.states[static_cast<size_t>(t % kLayers)]);
    }
    state.SetItemsProcessed(state.iterations() * n);
}

BENCHMARK(BM_DeltaChunked)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeltaRecurrent)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeltaSteps)->Arg(48)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
