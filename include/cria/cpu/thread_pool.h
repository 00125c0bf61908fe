#pragma once
// A persistent pool of worker threads for data-parallel kernels.
//
//   cria::cpu::ThreadPool pool(4);            // the caller + 3 workers
//   pool.parallel_for(n_rows, [&](int64_t row, int thread) { ... });
//
// Design, and why:
// - The calling thread takes part in the work, so a pool of N threads starts
//   N-1 workers and thread index 0 is always the caller.
// - Work is handed out dynamically: tasks are grouped into chunks, and every
//   thread claims the next chunk from one atomic counter until none is left.
//   When a peer is descheduled (another process busy on its core), the running
//   threads simply take its share instead of waiting for it; the caller only
//   waits for chunks a peer has actually started.
// - Idle workers spin for a bounded time (Options::spin_us, a few tens of
//   microseconds) so back-to-back dispatches are cheap, then sleep on a futex
//   so a busy machine is not robbed of CPU time.
// - Nested use: parallel_for called from inside a task of the same pool runs
//   the inner loop inline, serially, on the calling thread, with the same
//   thread index (so per-thread scratch indexed by `thread` stays private).
//   Called from a task of a different pool, it dispatches normally with the
//   calling thread as thread 0 (two pools that call into each other from
//   their tasks can deadlock: don't). Calls from several outside threads at
//   once are serialised.
// - An exception thrown by a task stops the hand-out of further chunks and is
//   rethrown from parallel_for once every started chunk has finished (the
//   first exception wins).
// - CRIA_POOL_STATS=1 in the environment makes the pool account each
//   parallel_for call site's wall, busy and idle time and print the table to
//   stderr when the pool is destroyed (src/cpu/thread_pool_stats.h).

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace cria::cpu {

class ThreadPoolStats;

class ThreadPool {
public:
    struct Options {
        // How long an idle worker (or the waiting caller) spins before it
        // sleeps. 0 sleeps at once.
        int spin_us = 50;
    };

    // n_threads counts the caller: 1 means no worker threads at all.
    // n_threads <= 0 means one per hardware thread.
    explicit ThreadPool(int n_threads, Options options);
    explicit ThreadPool(int n_threads = 0) : ThreadPool(n_threads, Options{}) {}
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads that run tasks, the caller included.
    int size() const { return n_threads_; }

    // Calls fn(task, thread) once for every task in [0, n_tasks), with
    // 0 <= thread < size(). Tasks run in chunks of `grain` consecutive tasks
    // (grain <= 0: chosen so each thread gets several chunks).
    template <class Fn>
    void parallel_for(int64_t n_tasks, Fn&& fn, int64_t grain = 0) {
        using F = std::remove_reference_t<Fn>;
        // The signature names Fn, whose type names the calling function: the
        // call site's label in CRIA_POOL_STATS.
        run(n_tasks, grain, &call<F>, const_cast<void*>(static_cast<const void*>(&fn)), __PRETTY_FUNCTION__);
    }

    // Calls fn(index) once for each index in [0, size()). The indices are
    // handed out like tasks, so they need not run on distinct OS threads (a
    // descheduled worker's index is taken by another thread).
    template <class Fn>
    void for_each_thread(Fn&& fn) {
        parallel_for(n_threads_, [&fn](int64_t task, int) { fn(static_cast<int>(task)); }, 1);
    }

    // The hardware threads this process may run on.
    static int hardware_threads();

    // True while the current thread is running a task of some pool (always
    // true on worker threads).
    static bool in_task();

private:
    using TaskFn = void (*)(void* ctx, int64_t begin, int64_t end, int thread);

    template <class F>
    static void call(void* ctx, int64_t begin, int64_t end, int thread) {
        F& fn = *static_cast<F*>(ctx);
        for (int64_t i = begin; i < end; ++i) fn(i, thread);
    }

    void run(int64_t n_tasks, int64_t grain, TaskFn fn, void* ctx, const char* site);
    void run_inline(int64_t n_tasks, TaskFn fn, void* ctx, const char* site);
    void worker_main(int thread);
    // Claims and runs chunks of the current job until none is left.
    void work(int thread);
    void wait_for_job(uint32_t& seen);
    void wait_until_done();

    int n_threads_;
    Options options_;
    std::vector<std::thread> workers_;
    std::mutex caller_mutex_;  // one outside caller at a time

    // The current job. Written by the caller before it publishes the job
    // through `claim_` (release); read by a thread only after it claimed a
    // chunk of that job, which keeps the job (and `ctx`) alive until then.
    TaskFn job_fn_ = nullptr;
    void* job_ctx_ = nullptr;
    int64_t job_n_tasks_ = 0;
    int64_t job_grain_ = 1;

    // Packed claim word: [63:32] job generation, [31:16] next chunk,
    // [15:0] number of chunks. Claiming is a CAS, so a late thread holding a
    // stale generation can never take a chunk of a newer job.
    alignas(64) std::atomic<uint64_t> claim_{0};
    // Chunks not yet finished; the caller returns when it reaches 0.
    alignas(64) std::atomic<uint32_t> remaining_{0};
    std::atomic<uint32_t> caller_sleeping_{0};
    // Bumped for each job; idle workers sleep on it (futex word).
    alignas(64) std::atomic<uint32_t> wake_seq_{0};
    std::atomic<uint32_t> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::atomic<bool> cancelled_{false};
    uint32_t generation_ = 0;  // caller-side only

    std::mutex error_mutex_;
    std::exception_ptr error_;

    ThreadPoolStats* stats_ = nullptr;  // CRIA_POOL_STATS only
};

}  // namespace cria::cpu
