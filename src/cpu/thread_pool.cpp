// The thread pool: dynamic chunk claiming, bounded spinning, futex sleeping.
// See include/cria/cpu/thread_pool.h for the design.

#include "cria/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "cpu/thread_pool_stats.h"
#include "cria/core/error.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cria::cpu {
namespace {

// The pool whose task this thread is running (null outside tasks) and the
// thread index it runs under. Set for the lifetime of a worker thread, and
// around the caller's own chunks: a parallel_for on the same pool issued from
// inside a task then runs inline.
thread_local const ThreadPool* t_current_pool = nullptr;
thread_local int t_thread_index = 0;

class InTaskScope {
public:
    InTaskScope(const ThreadPool* pool, int thread) : previous_pool_(t_current_pool), previous_index_(t_thread_index) {
        t_current_pool = pool;
        t_thread_index = thread;
    }
    ~InTaskScope() {
        t_current_pool = previous_pool_;
        t_thread_index = previous_index_;
    }
    InTaskScope(const InTaskScope&) = delete;
    InTaskScope& operator=(const InTaskScope&) = delete;

private:
    const ThreadPool* previous_pool_;
    int previous_index_;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

// Sleeps while *word == expected (spurious returns are fine: callers loop).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
    word.wait(expected);
#endif
}

void futex_wake_all(std::atomic<uint32_t>& word) {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
    word.notify_all();
#endif
}

// Spins until `done()` or until `spin_us` microseconds have passed. Reading
// the clock costs ~20 ns, so it is read only every few pauses.
template <class Done>
bool spin_until(Done done, int spin_us) {
    if (spin_us <= 0) return done();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
    for (;;) {
        for (int i = 0; i < 16; ++i) {
            if (done()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= deadline) return done();
    }
}

constexpr uint64_t kMaxChunks = 0xFFFF;

}  // namespace

int ThreadPool::hardware_threads() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
}

bool ThreadPool::in_task() { return t_current_pool != nullptr; }

ThreadPool::ThreadPool(int n_threads, Options options)
    : n_threads_(n_threads > 0 ? n_threads : hardware_threads()), options_(options) {
    if (n_threads_ > 1024) throw Error("thread pool: " + std::to_string(n_threads_) + " threads is more than the 1024 supported");
    stats_ = ThreadPoolStats::create_if_enabled(n_threads_);
    workers_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_main(t); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_seq_cst);
    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(wake_seq_);
    for (std::thread& w : workers_) w.join();
    delete stats_;
}

// A job the caller runs alone, as one chunk.
void ThreadPool::run_inline(int64_t n_tasks, TaskFn fn, void* ctx, const char* site) {
    InTaskScope scope(this, 0);
    if (!stats_) {
        fn(ctx, 0, n_tasks, 0);
        return;
    }
    std::lock_guard caller_lock(caller_mutex_);
    stats_->job_begin();
    const ThreadPoolStats::ChunkClock begin = stats_->chunk_begin();
    fn(ctx, 0, n_tasks, 0);
    stats_->chunk_end(0, begin);
    stats_->job_end(site, false);
}

void ThreadPool::run(int64_t n_tasks, int64_t grain, TaskFn fn, void* ctx, const char* site) {
    if (n_tasks <= 0) return;
    if (t_current_pool == this) {
        // Nested call from one of our own tasks: run inline, same thread index.
        fn(ctx, 0, n_tasks, t_thread_index);
        return;
    }
    if (n_threads_ == 1) {
        run_inline(n_tasks, fn, ctx, site);
        return;
    }
    if (grain <= 0) {
        // Several chunks per thread, so a thread that falls behind (or is
        // descheduled) leaves work the others can take.
        const int64_t target_chunks = static_cast<int64_t>(n_threads_) * 4;
        grain = (n_tasks + target_chunks - 1) / target_chunks;
    }
    grain = std::max<int64_t>(grain, (n_tasks + static_cast<int64_t>(kMaxChunks) - 1) / static_cast<int64_t>(kMaxChunks));
    const uint64_t n_chunks = static_cast<uint64_t>((n_tasks + grain - 1) / grain);
    if (n_chunks == 1) {
        run_inline(n_tasks, fn, ctx, site);
        return;
    }

    std::lock_guard caller_lock(caller_mutex_);
    if (stats_) stats_->job_begin();
    job_fn_ = fn;
    job_ctx_ = ctx;
    job_n_tasks_ = n_tasks;
    job_grain_ = grain;
    error_ = nullptr;
    cancelled_.store(false, std::memory_order_relaxed);
    remaining_.store(static_cast<uint32_t>(n_chunks), std::memory_order_relaxed);
    ++generation_;
    // Publishing the claim word releases the job fields above to any thread
    // whose claim CAS reads it.
    claim_.store((static_cast<uint64_t>(generation_) << 32) | n_chunks, std::memory_order_release);

    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(wake_seq_);

    {
        InTaskScope scope(this, 0);
        work(0);
    }
    wait_until_done();
    if (stats_) stats_->job_end(site, true);

    if (error_) {
        std::exception_ptr error = std::exchange(error_, nullptr);
        std::rethrow_exception(error);
    }
}

void ThreadPool::work(int thread) {
    for (;;) {
        uint64_t word = claim_.load(std::memory_order_acquire);
        uint64_t chunk = 0;
        for (;;) {
            chunk = (word >> 16) & 0xFFFF;
            const uint64_t n_chunks = word & 0xFFFF;
            if (chunk >= n_chunks) return;
            if (claim_.compare_exchange_weak(word, word + (uint64_t{1} << 16), std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
                break;
            }
        }
        // This chunk is ours and unfinished, so the caller is still inside
        // run() and the job fields describe our job.
        const int64_t begin = static_cast<int64_t>(chunk) * job_grain_;
        const int64_t end = std::min(job_n_tasks_, begin + job_grain_);
        if (!cancelled_.load(std::memory_order_relaxed)) {
            try {
                if (stats_) {
                    const ThreadPoolStats::ChunkClock clock = stats_->chunk_begin();
                    job_fn_(job_ctx_, begin, end, thread);
                    stats_->chunk_end(thread, clock);
                } else {
                    job_fn_(job_ctx_, begin, end, thread);
                }
            } catch (...) {
                std::lock_guard lock(error_mutex_);
                if (!error_) error_ = std::current_exception();
                cancelled_.store(true, std::memory_order_relaxed);
            }
        }
        if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
            caller_sleeping_.load(std::memory_order_seq_cst) != 0) {
            futex_wake_all(remaining_);
        }
    }
}

void ThreadPool::wait_until_done() {
    if (spin_until([this] { return remaining_.load(std::memory_order_acquire) == 0; }, options_.spin_us)) return;
    for (;;) {
        caller_sleeping_.store(1, std::memory_order_seq_cst);
        const uint32_t left = remaining_.load(std::memory_order_seq_cst);
        if (left == 0) break;
        futex_wait(remaining_, left);
    }
    caller_sleeping_.store(0, std::memory_order_relaxed);
    // Pairs with the workers' release of their last chunk.
    (void)remaining_.load(std::memory_order_acquire);
}

void ThreadPool::wait_for_job(uint32_t& seen) {
    auto changed = [this, &seen] {
        return wake_seq_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_acquire);
    };
    if (!spin_until(changed, options_.spin_us)) {
        for (;;) {
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            if (wake_seq_.load(std::memory_order_seq_cst) == seen) futex_wait(wake_seq_, seen);
            sleepers_.fetch_sub(1, std::memory_order_seq_cst);
            if (changed()) break;
        }
    }
    seen = wake_seq_.load(std::memory_order_acquire);
}

void ThreadPool::worker_main(int thread) {
    t_current_pool = this;
    t_thread_index = thread;
    // Start from the value the constructor left, not from a fresh load: jobs
    // (or the stop request) published before this thread got going must
    // still count as news.
    uint32_t seen = 0;
    for (;;) {
        wait_for_job(seen);
        if (stop_.load(std::memory_order_acquire)) return;
        work(thread);
    }
}

}  // namespace cria::cpu
