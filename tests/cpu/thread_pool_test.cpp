// The thread pool: every task exactly once, no lost wake-ups, exceptions,
// nesting. Run these under ThreadSanitizer too (-DCRIA_TSAN=ON).

#include "cria/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <stdexcept>
#include <thread>
#include <vector>

namespace cria::cpu {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        for (int64_t n : {1, 2, 7, 31, 33, 255, 257, 4097, 70000}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::atomic<int> bad_thread{0};
            pool.parallel_for(n, [&](int64_t task, int thread) {
                if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
                hits[static_cast<size_t>(task)].fetch_add(1, std::memory_order_relaxed);
            });
            for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "task " << i << " of " << n;
            EXPECT_EQ(bad_thread.load(), 0);
        }
    }
}

TEST(ThreadPool, ExplicitGrainAndZeroTasks) {
    ThreadPool pool(3);
    pool.parallel_for(0, [](int64_t, int) { FAIL() << "no task expected"; });
    for (int64_t grain : {1, 3, 64, 1000}) {
        std::vector<std::atomic<int>> hits(1000);
        pool.parallel_for(1000, [&](int64_t task, int) { hits[static_cast<size_t>(task)]++; }, grain);
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
}

// Many tiny back-to-back jobs: a lost wake-up or a stale claim would hang
// (ctest timeout) or run a task twice / not at all.
TEST(ThreadPool, ManyShortDispatches) {
    for (int spin_us : {0, 50}) {
        ThreadPool pool(3, ThreadPool::Options{spin_us});
        std::atomic<int64_t> sum{0};
        const int kDispatches = spin_us == 0 ? 20000 : 100000;
        for (int d = 0; d < kDispatches; ++d) {
            pool.parallel_for(4, [&](int64_t task, int) { sum.fetch_add(task + 1, std::memory_order_relaxed); }, 1);
        }
        EXPECT_EQ(sum.load(), int64_t{10} * kDispatches);
    }
}

// Workers that went to sleep (spin 0 µs, pauses between jobs) must wake.
TEST(ThreadPool, WakesSleepingWorkers) {
    ThreadPool pool(4, ThreadPool::Options{0});
    for (int round = 0; round < 50; ++round) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::vector<std::atomic<int>> seen_threads(4);
        // Slow-ish tasks so the workers have time to join in.
        pool.parallel_for(64, [&](int64_t, int thread) {
            seen_threads[static_cast<size_t>(thread)]++;
            volatile double x = 0;
            for (int i = 0; i < 2000; ++i) x = x + i;
        }, 1);
        int total = 0;
        for (auto& s : seen_threads) total += s.load();
        ASSERT_EQ(total, 64);
    }
}

TEST(ThreadPool, ExceptionPropagatesAndPoolStaysUsable) {
    ThreadPool pool(4);
    for (int round = 0; round < 100; ++round) {
        EXPECT_THROW(pool.parallel_for(100, [&](int64_t task, int) {
            if (task == round % 100) throw std::runtime_error("task failed");
        }, 1), std::runtime_error);
        std::atomic<int> count{0};
        pool.parallel_for(100, [&](int64_t, int) { count++; }, 1);
        ASSERT_EQ(count.load(), 100);
    }
    ThreadPool single(1);
    EXPECT_THROW(single.parallel_for(3, [](int64_t, int) { throw std::logic_error("x"); }), std::logic_error);
}

TEST(ThreadPool, NestedCallsRunInlineOnTheSameThread) {
    ThreadPool pool(3);
    std::vector<std::atomic<int>> hits(16 * 8);
    std::atomic<int> mismatched{0};
    pool.parallel_for(16, [&](int64_t outer, int thread) {
        EXPECT_TRUE(ThreadPool::in_task());
        pool.parallel_for(8, [&](int64_t inner, int inner_thread) {
            if (inner_thread != thread) mismatched++;
            hits[static_cast<size_t>(outer * 8 + inner)]++;
        });
    }, 1);
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_EQ(mismatched.load(), 0);
    EXPECT_FALSE(ThreadPool::in_task());
}

TEST(ThreadPool, CallsIntoAnotherPoolDispatchNormally) {
    ThreadPool outer(2), inner(3);
    std::vector<std::atomic<int>> hits(4 * 50);
    std::atomic<int> bad_thread{0};
    outer.parallel_for(4, [&](int64_t o, int) {
        inner.parallel_for(50, [&](int64_t i, int thread) {
            if (thread < 0 || thread >= inner.size()) bad_thread++;
            hits[static_cast<size_t>(o * 50 + i)]++;
        }, 1);
    }, 1);
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_EQ(bad_thread.load(), 0);
}

TEST(ThreadPool, ConcurrentOutsideCallersAreSerialised) {
    ThreadPool pool(3);
    std::atomic<int64_t> sum{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c) {
        callers.emplace_back([&] {
            for (int d = 0; d < 2000; ++d) pool.parallel_for(5, [&](int64_t t, int) { sum += t; }, 1);
        });
    }
    for (auto& t : callers) t.join();
    EXPECT_EQ(sum.load(), int64_t{3} * 2000 * 10);
}

TEST(ThreadPool, ForEachThreadCoversEveryIndexOnce) {
    ThreadPool pool(4);
    std::vector<std::atomic<int>> hits(4);
    pool.for_each_thread([&](int thread) { hits[static_cast<size_t>(thread)]++; });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, DefaultSizeIsHardwareThreads) {
    ThreadPool pool;
    EXPECT_EQ(pool.size(), ThreadPool::hardware_threads());
    EXPECT_GE(pool.size(), 1);
}

}  // namespace
}  // namespace cria::cpu

namespace {
void count_in_a_named_site(cria::cpu::ThreadPool& pool, std::atomic<int>& sum) {
    pool.parallel_for(64, [&](int64_t, int) { sum.fetch_add(1); }, 1);
}
}  // namespace

// CRIA_POOL_STATS=1: the pool prints one line per call site, named after the
// calling function, with its call count, when it is destroyed.
TEST(ThreadPool, StatsNameEachCallSite) {
    setenv("CRIA_POOL_STATS", "1", 1);
    testing::internal::CaptureStderr();
    std::atomic<int> sum{0};
    {
        cria::cpu::ThreadPool pool(2);
        for (int i = 0; i < 3; ++i) count_in_a_named_site(pool, sum);
        pool.parallel_for(1, [&](int64_t, int) { sum.fetch_add(1); });  // one chunk: run inline
    }
    const std::string out = testing::internal::GetCapturedStderr();
    unsetenv("CRIA_POOL_STATS");
    EXPECT_EQ(sum.load(), 3 * 64 + 1);
    EXPECT_NE(out.find("pool stats (2 threads)"), std::string::npos) << out;
    const size_t site = out.find("count_in_a_named_site");
    ASSERT_NE(site, std::string::npos) << out;
    const size_t line = out.rfind('\n', site) + 1;
    // calls and dispatched jobs lead the line.
    EXPECT_EQ(out.substr(line, 20), "        3         3 ") << out;
}

TEST(ThreadPool, NoStatsWithoutTheVariable) {
    unsetenv("CRIA_POOL_STATS");
    testing::internal::CaptureStderr();
    {
        cria::cpu::ThreadPool pool(2);
        pool.parallel_for(64, [](int64_t, int) {}, 1);
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}
