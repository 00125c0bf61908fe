// Op kernels per instruction-set level (0 = scalar, 1 = avx2, 2 = avx512),
// single-threaded, on sizes of a 1-3B model's generation step:
//   BM_RmsNorm/isa        one 4096-wide row
//   BM_Softmax/isa        one 32k-wide row with a mask
//   BM_SwiGlu/isa         one 11008-wide row
//   BM_Gelu/isa, BM_GeluErf/isa   one 11008-wide row (tanh form, erf form)
//   BM_Attention/isa/kv   one query token, 32 heads over 8 kv heads, head dim
//                         128, 2048 cached tokens, kv type 0 = f32, 1 = f16,
//                         8 = q8_0 (ggml type ids)
//   BM_AttentionPrefill/shape/n   a causal prompt of n tokens attending to
//                         itself (f16 cache, avx512): shape 0 = Qwen3-0.6B
//                         (16 heads over 8, head dim 128), 1 = Llama-3.2-1B
//                         (32 heads over 8, head dim 64); items = query rows
//                         x visible keys
//   BM_AttentionVerify/n  n query tokens (a verify batch, a short turn) at
//                         the end of a 2048-token f16 cache, Qwen3-0.6B shape
//
//   ./bench_ops_kernels --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/quant/quantize.h"

namespace {

using cria::ElementType;
using cria::ops::TensorView;

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

cria::ops::CpuOps& single_thread_ops() {
    static cria::cpu::ThreadPool pool(1);
    static cria::ops::CpuOps ops(pool);
    return ops;
}

bool set_isa(benchmark::State& state) {
    const auto isa = static_cast<cria::cpu::Isa>(state.range(0));
    if (!cria::cpu::isa_supported(isa)) {
        state.SkipWithError("ISA not supported here");
        return false;
    }
    cria::cpu::set_isa_limit(isa);
    return true;
}

void BM_RmsNorm(benchmark::State& state) {
    if (!set_isa(state)) return;
    auto x = random_floats(4096, 1), w = random_floats(4096, 2);
    std::vector<float> y(4096);
    const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {4096});
    const auto vy = TensorView::contiguous(ElementType::F32, y.data(), {4096});
    for (auto _ : state) single_thread_ops().rms_norm(vx, w.data(), 1e-6f, vy);
    state.SetBytesProcessed(state.iterations() * 4096 * 4);
}
BENCHMARK(BM_RmsNorm)->DenseRange(0, 2);

void BM_Softmax(benchmark::State& state) {
    if (!set_isa(state)) return;
    const int64_t n = 32768;
    auto x = random_floats(static_cast<size_t>(n), 3), mask = random_floats(static_cast<size_t>(n), 4);
    std::vector<float> y(static_cast<size_t>(n));
    const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n});
    const auto vm = TensorView::contiguous(ElementType::F32, mask.data(), {n});
    const auto vy = TensorView::contiguous(ElementType::F32, y.data(), {n});
    cria::ops::SoftmaxParams p;
    p.mask = &vm;
    for (auto _ : state) single_thread_ops().softmax(vx, p, vy);
    state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Softmax)->DenseRange(0, 2);

void BM_SwiGlu(benchmark::State& state) {
    if (!set_isa(state)) return;
    const int64_t n = 11008;
    auto g = random_floats(static_cast<size_t>(n), 5), u = random_floats(static_cast<size_t>(n), 6);
    std::vector<float> y(static_cast<size_t>(n));
    const auto vg = TensorView::contiguous(ElementType::F32, g.data(), {n});
    const auto vu = TensorView::contiguous(ElementType::F32, u.data(), {n});
    const auto vy = TensorView::contiguous(ElementType::F32, y.data(), {n});
    for (auto _ : state) single_thread_ops().swiglu(vg, vu, vy);
    state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SwiGlu)->DenseRange(0, 2);

template <void (cria::ops::CpuOps::*Op)(const TensorView&, const TensorView&)>
void BM_Unary(benchmark::State& state) {
    if (!set_isa(state)) return;
    const int64_t n = 11008;
    auto x = random_floats(static_cast<size_t>(n), 9);
    for (float& v : x) v *= 3.0f;  // -6..6: every region of the GELU-erf approximation
    std::vector<float> y(static_cast<size_t>(n));
    const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n});
    const auto vy = TensorView::contiguous(ElementType::F32, y.data(), {n});
    for (auto _ : state) (single_thread_ops().*Op)(vx, vy);
    state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Unary<&cria::ops::CpuOps::gelu>)->Name("BM_Gelu")->DenseRange(0, 2);
BENCHMARK(BM_Unary<&cria::ops::CpuOps::gelu_erf>)->Name("BM_GeluErf")->DenseRange(0, 2);

void BM_Attention(benchmark::State& state) {
    if (!set_isa(state)) return;
    const auto type = static_cast<ElementType>(state.range(1));
    const int64_t d = 128, heads = 32, kv_heads = 8, n_kv = 2048;
    const auto q = random_floats(static_cast<size_t>(d * heads), 7);
    const auto kf = random_floats(static_cast<size_t>(d * kv_heads * n_kv), 8);
    const size_t row = *cria::row_size_bytes(type, d);
    std::vector<uint8_t> k(row * static_cast<size_t>(kv_heads * n_kv)), v(k.size());
    cria::quant::quantize_rows(type, kf.data(), k.data(), kv_heads * n_kv, d);
    cria::quant::quantize_rows(type, kf.data(), v.data(), kv_heads * n_kv, d);
    std::vector<float> out(static_cast<size_t>(d * heads));
    const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {d, heads, 1});
    const auto vk = TensorView::contiguous(type, k.data(), {d, kv_heads, n_kv});
    const auto vv = TensorView::contiguous(type, v.data(), {d, kv_heads, n_kv});
    const auto vo = TensorView::contiguous(ElementType::F32, out.data(), {d, heads, 1});
    cria::ops::AttentionParams p;
    p.scale = 0.088f;
    for (auto _ : state) single_thread_ops().attention(vq, vk, vv, p, vo);
    state.SetItemsProcessed(state.iterations() * heads * n_kv);
}
BENCHMARK(BM_Attention)->ArgsProduct({{0, 1, 2}, {0, 1, 8}});

void BM_AttentionPrefill(benchmark::State& state) {
    const bool llama = state.range(0) == 1;
    const int64_t d = llama ? 64 : 128, heads = llama ? 32 : 16, kv_heads = 8, n = state.range(1);
    const auto q = random_floats(static_cast<size_t>(d * heads * n), 7);
    const auto kf = random_floats(static_cast<size_t>(d * kv_heads * n), 8);
    const auto vf = random_floats(static_cast<size_t>(d * kv_heads * n), 9);
    std::vector<uint8_t> k(kf.size() * 2), v(vf.size() * 2);
    cria::quant::quantize_rows(ElementType::F16, kf.data(), k.data(), kv_heads * n, d);
    cria::quant::quantize_rows(ElementType::F16, vf.data(), v.data(), kv_heads * n, d);
    std::vector<float> out(static_cast<size_t>(d * heads * n));
    const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {d, heads, n});
    const auto vk = TensorView::contiguous(ElementType::F16, k.data(), {d, kv_heads, n});
    const auto vv = TensorView::contiguous(ElementType::F16, v.data(), {d, kv_heads, n});
    const auto vo = TensorView::contiguous(ElementType::F32, out.data(), {d, heads, n});
    cria::ops::AttentionParams p;
    p.scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (auto _ : state) single_thread_ops().attention(vq, vk, vv, p, vo);
    state.SetItemsProcessed(state.iterations() * heads * n * (n + 1) / 2);
}
BENCHMARK(BM_AttentionPrefill)->ArgsProduct({{0, 1}, {512, 4096}})->Unit(benchmark::kMillisecond);

void BM_AttentionVerify(benchmark::State& state) {
    const int64_t d = 128, heads = 16, kv_heads = 8, n_kv = 2048, n = state.range(0);
    const auto q = random_floats(static_cast<size_t>(d * heads * n), 7);
    const auto kf = random_floats(static_cast<size_t>(d * kv_heads * n_kv), 8);
    std::vector<uint8_t> k(kf.size() * 2), v(kf.size() * 2);
    cria::quant::quantize_rows(ElementType::F16, kf.data(), k.data(), kv_heads * n_kv, d);
    cria::quant::quantize_rows(ElementType::F16, kf.data(), v.data(), kv_heads * n_kv, d);
    std::vector<float> out(static_cast<size_t>(d * heads * n));
    const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {d, heads, n});
    const auto vk = TensorView::contiguous(ElementType::F16, k.data(), {d, kv_heads, n_kv});
    const auto vv = TensorView::contiguous(ElementType::F16, v.data(), {d, kv_heads, n_kv});
    const auto vo = TensorView::contiguous(ElementType::F32, out.data(), {d, heads, n});
    cria::ops::AttentionParams p;
    p.scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (auto _ : state) single_thread_ops().attention(vq, vk, vv, p, vo);
    state.SetItemsProcessed(state.iterations() * heads * n * n_kv);
}
BENCHMARK(BM_AttentionVerify)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Arg(8)->Arg(16);

}  // namespace

BENCHMARK_MAIN();
