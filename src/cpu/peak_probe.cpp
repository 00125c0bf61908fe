// Micro-benchmarks of the machine's limits (see cria/cpu/peak_probe.h).
//
// Each compute probe is a loop of one instruction on kChains independent
// accumulators: enough chains that the instruction's latency is hidden on
// every core we know (2 pipes x 5 cycles on Sapphire Rapids and Zen 4/5), so
// the loop runs at the instruction's throughput. The accumulators' inputs are
// loop-invariant but the instruction cannot be folded away (each result feeds
// the next), and an empty asm keeps the compiler from reordering anything
// across the loop's end.

#include "cria/cpu/peak_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <ctime>
#include <vector>

#include "cria/cpu/features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cria::cpu {
namespace {

constexpr int kChains = 20;  // the asm below writes zmm0..19

#if defined(__x86_64__)
// The loops are written in assembly: the instruction, 20 times on zmm0..19
// (ymm0..19 for AVX2) with loop-invariant inputs in zmm20/21. From C++ with
// an array of accumulators GCC 12 keeps the array in memory, which measures
// the store path instead of the instruction.
#define CRIA_X20(op)                                                                                  \
    op " %%zmm21, %%zmm20, %%zmm0\n\t" op " %%zmm21, %%zmm20, %%zmm1\n\t" op " %%zmm21, %%zmm20, %%zmm2\n\t"   \
    op " %%zmm21, %%zmm20, %%zmm3\n\t" op " %%zmm21, %%zmm20, %%zmm4\n\t" op " %%zmm21, %%zmm20, %%zmm5\n\t"   \
    op " %%zmm21, %%zmm20, %%zmm6\n\t" op " %%zmm21, %%zmm20, %%zmm7\n\t" op " %%zmm21, %%zmm20, %%zmm8\n\t"   \
    op " %%zmm21, %%zmm20, %%zmm9\n\t" op " %%zmm21, %%zmm20, %%zmm10\n\t" op " %%zmm21, %%zmm20, %%zmm11\n\t" \
    op " %%zmm21, %%zmm20, %%zmm12\n\t" op " %%zmm21, %%zmm20, %%zmm13\n\t" op " %%zmm21, %%zmm20, %%zmm14\n\t" \
    op " %%zmm21, %%zmm20, %%zmm15\n\t" op " %%zmm21, %%zmm20, %%zmm16\n\t" op " %%zmm21, %%zmm20, %%zmm17\n\t" \
    op " %%zmm21, %%zmm20, %%zmm18\n\t" op " %%zmm21, %%zmm20, %%zmm19\n\t"

#define CRIA_ZMM_CLOBBERS                                                                                     \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
        "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21"

// Zeroes zmm0..19 and sets zmm20/21 to small values, then iters rounds.
#define CRIA_PROBE_LOOP(op)                                                                      \
    asm volatile(                                                                              \
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"                                                    \
        "vmovdqa64 %%zmm0, %%zmm1\n\tvmovdqa64 %%zmm0, %%zmm2\n\tvmovdqa64 %%zmm0, %%zmm3\n\t" \
        "vmovdqa64 %%zmm0, %%zmm4\n\tvmovdqa64 %%zmm0, %%zmm5\n\tvmovdqa64 %%zmm0, %%zmm6\n\t" \
        "vmovdqa64 %%zmm0, %%zmm7\n\tvmovdqa64 %%zmm0, %%zmm8\n\tvmovdqa64 %%zmm0, %%zmm9\n\t" \
        "vmovdqa64 %%zmm0, %%zmm10\n\tvmovdqa64 %%zmm0, %%zmm11\n\tvmovdqa64 %%zmm0, %%zmm12\n\t" \
        "vmovdqa64 %%zmm0, %%zmm13\n\tvmovdqa64 %%zmm0, %%zmm14\n\tvmovdqa64 %%zmm0, %%zmm15\n\t" \
        "vmovdqa64 %%zmm0, %%zmm16\n\tvmovdqa64 %%zmm0, %%zmm17\n\tvmovdqa64 %%zmm0, %%zmm18\n\t" \
        "vmovdqa64 %%zmm0, %%zmm19\n\t"                                                        \
        "vpbroadcastd %[one], %%zmm20\n\t"                                                     \
        "vpbroadcastd %[one], %%zmm21\n\t"                                                     \
        "1:\n\t" CRIA_X20(op) "dec %[n]\n\tjnz 1b\n\t"                                       \
        : [n] "+r"(iters)                                                                      \
        : [one] "r"(0x3c003c00)                                                                \
        : CRIA_ZMM_CLOBBERS, "cc")

__attribute__((target("avx512f,avx512vnni"))) uint64_t vnni_loop(int64_t iters) {
    CRIA_PROBE_LOOP("vpdpbusd");
    return static_cast<uint64_t>(iters);
}

__attribute__((target("avx512f,avx512bf16"))) uint64_t bf16_loop(int64_t iters) {
    CRIA_PROBE_LOOP("vdpbf16ps");
    return static_cast<uint64_t>(iters);
}

__attribute__((target("avx512f"))) uint64_t fma512_loop(int64_t iters) {
    CRIA_PROBE_LOOP("vfmadd231ps");
    return static_cast<uint64_t>(iters);
}

__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, size_t bytes) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 128 <= bytes; i += 128) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    // Unsigned: the sum wraps (it only keeps the loads alive), and a signed one would overflow.
    return static_cast<uint64_t>(_mm256_extract_epi64(s, 0)) + static_cast<uint64_t>(_mm256_extract_epi64(s, 3));
}
#endif

uint64_t read_plain(const uint8_t* p, size_t bytes) {
    uint64_t s = 0;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t v;
        std::memcpy(&v, p + i, 8);
        s += v;
    }
    return s;
}

// Seconds one thread has run on a core (not counting time another process had it).
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// n_threads threads each run work(thread) once, started together; returns
// the sum over threads of work's rate (units(thread) / the thread's CPU
// seconds), the best of `trials`. CPU time rather than wall time: on a
// machine shared with other processes a thread that loses its core for a
// while does not make the machine's peak look lower.
template <class Work>
double best_parallel_rate(int n_threads, int trials, double units, const Work& work) {
    double best = 0;
    std::atomic<uint64_t> sink{0};
    for (int trial = 0; trial < trials; ++trial) {
        std::atomic<int> ready{0};
        std::atomic<bool> go{false};
        std::vector<double> seconds(static_cast<size_t>(n_threads));
        std::vector<std::thread> threads;
        for (int t = 0; t < n_threads; ++t)
            threads.emplace_back([&, t] {
                ready.fetch_add(1);
                while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
                const double t0 = thread_cpu_seconds();
                sink.fetch_add(work(t), std::memory_order_relaxed);
                seconds[static_cast<size_t>(t)] = thread_cpu_seconds() - t0;
            });
        while (ready.load() < n_threads) std::this_thread::yield();
        go.store(true, std::memory_order_release);
        for (auto& th : threads) th.join();
        double rate = 0;
        for (double s : seconds) rate += units / std::max(s, 1e-9);
        best = std::max(best, rate);
    }
    return best;
}

// Operations per second of `loop` (ops_per_iter per iteration and thread).
template <class Loop>
double compute_rate(int n_threads, double ops_per_iter, Loop loop) {
    // 20 M instructions: a few milliseconds per trial, long enough for the
    // clock to settle and short enough to find a quiet moment.
    constexpr int64_t kIters = 1'000'000;
    return best_parallel_rate(n_threads, 5, static_cast<double>(kIters) * ops_per_iter,
                              [&](int) { return loop(kIters); });
}

// The read probe's buffer: 256 MiB, eight times the 32 MiB last-level cache
// of the machines we measure on (and larger than any we know), so every pass
// comes from DRAM. Five passes take about 30 ms at 50 GB/s.
constexpr size_t kReadProbeBytes = size_t{256} << 20;
constexpr int kReadProbePasses = 5;

// Fills p with pseudo-random words. A hypervisor that merges identical pages
// (KSM) would back a constant buffer with a few physical pages, and the
// "memory" bandwidth would be a cache bandwidth (the probe once read up to
// 79 GB/s on a machine whose triad reads 49).
void fill_random(uint8_t* p, size_t bytes, uint64_t seed) {
    uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        std::memcpy(p + i, &s, 8);
    }
}

// A sense-reversing barrier for the probe's own threads: they spin (the
// probe is short), so all leave it within a few hundred nanoseconds.
class SpinBarrier {
public:
    explicit SpinBarrier(int n) : n_(n) {}
    void arrive_and_wait() {
        const uint32_t gen = generation_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
            arrived_.store(0, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_acq_rel);
        } else {
            while (generation_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
        }
    }

private:
    const int n_;
    std::atomic<int> arrived_{0};
    std::atomic<uint32_t> generation_{0};
};

}  // namespace

double measure_read_bandwidth(int n_threads, size_t bytes, int passes) {
    n_threads = std::max(1, n_threads);
    passes = std::max(1, passes);
    struct AlignedFree {
        void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
    };
    const size_t slice = std::max<size_t>(128, bytes / static_cast<size_t>(n_threads) / 128 * 128);
    const size_t total = slice * static_cast<size_t>(n_threads);
    std::unique_ptr<uint8_t[], AlignedFree> buf(static_cast<uint8_t*>(::operator new[](total, std::align_val_t{64})));
#if defined(__x86_64__)
    const bool use_avx2 = cpu_features().avx2;
#endif
    // Wall time of each pass, from the barrier that starts every thread to
    // the barrier they all reach when done: the bandwidth of all threads
    // reading at once, as a decoding step reads its weights. (Summing each
    // thread's own rate would credit two threads that ran one after the
    // other with twice the bandwidth of one.) The best pass is kept: another
    // process can only make a pass slower, never faster.
    std::vector<double> seconds(static_cast<size_t>(passes), 0.0);
    std::atomic<uint64_t> sink{0};
    SpinBarrier barrier(n_threads);
    using Clock = std::chrono::steady_clock;
    const auto body = [&](int t) {
        uint8_t* p = buf.get() + slice * static_cast<size_t>(t);
        // First touch by the reading thread: its pages are placed near it.
        fill_random(p, slice, static_cast<uint64_t>(t));
        uint64_t sum = 0;
        for (int pass = 0; pass < passes; ++pass) {
            barrier.arrive_and_wait();
            const auto t0 = Clock::now();
#if defined(__x86_64__)
            sum += use_avx2 ? read_avx2(p, slice) : read_plain(p, slice);
#else
            sum += read_plain(p, slice);
#endif
            barrier.arrive_and_wait();
            if (t == 0) seconds[static_cast<size_t>(pass)] = std::chrono::duration<double>(Clock::now() - t0).count();
        }
        sink.fetch_add(sum, std::memory_order_relaxed);
    };
    std::vector<std::thread> threads;
    for (int t = 1; t < n_threads; ++t) threads.emplace_back(body, t);
    body(0);
    for (auto& th : threads) th.join();
    const double best = *std::min_element(seconds.begin(), seconds.end());
    return static_cast<double>(total) / std::max(best, 1e-9);
}

PeakRates measure_peaks(int n_threads) {
    n_threads = std::max(1, n_threads);
    PeakRates r;
    r.n_threads = n_threads;
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    const bool avx512 = f.avx512f && f.avx512bw && f.avx512vl;
    // Per instruction: lanes x products per lane x 2 ops, times the chains.
    if (avx512 && f.avx512_vnni) r.int8_ops_per_s = compute_rate(n_threads, kChains * 16 * 4 * 2.0, vnni_loop);
    if (avx512 && f.avx512_bf16) r.bf16_ops_per_s = compute_rate(n_threads, kChains * 16 * 2 * 2.0, bf16_loop);
    if (avx512) r.f32_ops_per_s = compute_rate(n_threads, kChains * 16 * 2.0, fma512_loop);
#endif
    r.read_bytes_per_s = measure_read_bandwidth(n_threads, kReadProbeBytes, kReadProbePasses);
    return r;
}

}  // namespace cria::cpu
