// Thread pool dispatch cost, and how it holds up on a busy machine.
//
//   BM_EmptyDispatch/T      parallel_for over T empty tasks: pure dispatch latency
//   BM_EmptyDispatchNoSpin  the same with spin_us = 0 (always sleep)
//   BM_SmallDispatches/T    a dispatch of 4T tasks of ~1 µs each, as one
//                           layer of a small model's generation step issues them
//   BM_SpinStaticBaseline/T the same work on a pool in the style of llama.cpp's:
//                           static split (task i on thread i % T), workers and
//                           caller spin without bound on a barrier
//
// The busy-machine figure: run the same binary while another process spins on
// one core, e.g.
//   taskset -c 1 sh -c 'while :; do :; done' & BUSY=$!
//   ./bench_threadpool_dispatch --benchmark_filter='Small|Baseline'
//   kill $BUSY
// A static split waits for its descheduled thread each time; the cria pool's
// running threads take over the descheduled one's chunks.

#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include "cria/cpu/thread_pool.h"

namespace {

cria::cpu::ThreadPool& pool_of(int threads) {
    static std::vector<std::unique_ptr<cria::cpu::ThreadPool>> pools(17);
    auto& p = pools[static_cast<size_t>(threads)];
    if (!p) p = std::make_unique<cria::cpu::ThreadPool>(threads);
    return *p;
}

// About a microsecond of arithmetic that the optimiser cannot remove.
void small_work(int64_t task) {
    float x = static_cast<float>(task);
    for (int i = 0; i < 400; ++i) x = x * 0.999f + 0.5f;
    benchmark::DoNotOptimize(x);
}

void BM_EmptyDispatch(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    auto& pool = pool_of(threads);
    for (auto _ : state) {
        pool.parallel_for(threads, [](int64_t task, int) { benchmark::DoNotOptimize(task); }, 1);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmptyDispatch)->Arg(1)->Arg(2)->Arg(4)->UseRealTime();

// Workers that never spin: every dispatch pays the futex wake-up. The gap to
// BM_EmptyDispatch is what the bounded spin (Options::spin_us) buys.
void BM_EmptyDispatchNoSpin(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    static cria::cpu::ThreadPool pool(2, cria::cpu::ThreadPool::Options{0});
    for (auto _ : state) {
        pool.parallel_for(threads, [](int64_t task, int) { benchmark::DoNotOptimize(task); }, 1);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmptyDispatchNoSpin)->Arg(2)->UseRealTime();

void BM_SmallDispatches(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    auto& pool = pool_of(threads);
    for (auto _ : state) {
        pool.parallel_for(4 * threads, [](int64_t task, int) { small_work(task); }, 1);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SmallDispatches)->Arg(1)->Arg(2)->UseRealTime();

// A deliberately naive pool for comparison: static split, unbounded spinning.
class SpinStaticPool {
public:
    explicit SpinStaticPool(int threads) : threads_(threads) {
        for (int t = 1; t < threads; ++t) {
            workers_.emplace_back([this, t] {
                uint64_t seen = 0;
                for (;;) {
                    uint64_t g;
                    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
                    }
                    seen = g;
                    if (stop_.load()) return;
                    run_slice(t);
                    done_.fetch_add(1, std::memory_order_acq_rel);
                }
            });
        }
    }
    ~SpinStaticPool() {
        stop_ = true;
        generation_.fetch_add(1);
        for (auto& w : workers_) w.join();
    }
    void run(int64_t n_tasks) {
        n_tasks_ = n_tasks;
        done_.store(0);
        generation_.fetch_add(1, std::memory_order_acq_rel);
        run_slice(0);
        while (done_.load(std::memory_order_acquire) != threads_ - 1) {
        }
    }

private:
    void run_slice(int t) {
        for (int64_t i = t; i < n_tasks_; i += threads_) small_work(i);
    }
    int threads_;
    std::atomic<int64_t> n_tasks_{0};
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> done_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::thread> workers_;
};

void BM_SpinStaticBaseline(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    SpinStaticPool pool(threads);
    for (auto _ : state) pool.run(4 * threads);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpinStaticBaseline)->Arg(2)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
