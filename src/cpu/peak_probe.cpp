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

}  // namespace

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
    const bool use_avx2 = f.avx2;
#else
    const bool use_avx2 = false;
#endif
    // 128 MiB: several times the last-level cache a core group shares on
    // today's servers, and read in a few milliseconds.
    constexpr size_t kBytes = size_t{128} << 20;
    struct AlignedFree {
        void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
    };
    std::unique_ptr<uint8_t[], AlignedFree> buf(static_cast<uint8_t*>(::operator new[](kBytes, std::align_val_t{64})));
    const size_t slice = kBytes / static_cast<size_t>(n_threads) / 128 * 128;
    // Each thread touches its own slice first (first touch places the pages
    // near the thread that reads them).
    best_parallel_rate(n_threads, 1, 1.0, [&](int t) {
        std::memset(buf.get() + slice * static_cast<size_t>(t), t + 1, slice);
        return uint64_t{0};
    });
    r.read_bytes_per_s = best_parallel_rate(n_threads, 4, static_cast<double>(slice), [&](int t) {
        const uint8_t* p = buf.get() + slice * static_cast<size_t>(t);
#if defined(__x86_64__)
        if (use_avx2) return read_avx2(p, slice);
#endif
        (void)use_avx2;
        return read_plain(p, slice);
    });
    return r;
}

}  // namespace cria::cpu
