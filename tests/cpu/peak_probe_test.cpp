// The peak probe: each rate is there exactly when the CPU has the
// instruction, and the rates keep the ratios the instructions' widths imply
// (same pipes, same clock: vpdpbusd does 4 products per 32-bit lane,
// vdpbf16ps 2, vfmadd 1), which catches a probe loop that measures something
// other than its instruction (a compiler that spills the accumulators).

#include "cria/cpu/peak_probe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "cria/cpu/features.h"

namespace cria::cpu {
namespace {

TEST(PeakProbe, RatesMatchTheInstructionsThisCpuHas) {
    const CpuFeatures& f = cpu_features();
    const PeakRates r = measure_peaks(1);
    std::printf("int8 %.3g, bf16 %.3g, f32 %.3g op/s, read %.3g B/s\n", r.int8_ops_per_s, r.bf16_ops_per_s,
                r.f32_ops_per_s, r.read_bytes_per_s);
    EXPECT_EQ(r.n_threads, 1);
    EXPECT_GT(r.read_bytes_per_s, 1e8);
    const bool avx512 = f.avx512f && f.avx512bw && f.avx512vl;
    EXPECT_EQ(r.int8_ops_per_s > 0, avx512 && f.avx512_vnni);
    EXPECT_EQ(r.bf16_ops_per_s > 0, avx512 && f.avx512_bf16);
    EXPECT_EQ(r.f32_ops_per_s > 0, avx512);
    if (!avx512) GTEST_SKIP() << "no AVX-512 here: no compute peaks to compare";
    // Wide bounds: the machine may be shared, and cores differ (some split
    // 512-bit dot products over two cycles).
    if (r.int8_ops_per_s > 0) {
        EXPECT_GT(r.int8_ops_per_s / r.f32_ops_per_s, 2.0);
        EXPECT_LT(r.int8_ops_per_s / r.f32_ops_per_s, 8.0);
    }
    if (r.bf16_ops_per_s > 0) {
        EXPECT_GT(r.bf16_ops_per_s / r.f32_ops_per_s, 1.0);
        EXPECT_LT(r.bf16_ops_per_s / r.f32_ops_per_s, 4.0);
    }
}

TEST(PeakProbe, ZeroThreadsMeansOne) { EXPECT_EQ(measure_peaks(0).n_threads, 1); }

// The read probe on awkward sizes: a buffer that does not split evenly into
// lines, more threads than cores, fewer bytes than one line per thread, and
// zero passes or threads (counted as one) all give a finite positive rate.
// (Its stability is a property of the machine, checked by hand: see
// bench/README.md.)
TEST(PeakProbe, ReadBandwidthOnAwkwardSizes) {
    for (const auto& [threads, bytes, passes] :
         {std::tuple{1, size_t{1} << 20, 2}, std::tuple{3, size_t{1000003}, 3}, std::tuple{4, size_t{100}, 1},
          std::tuple{0, size_t{4096}, 0}}) {
        const double rate = measure_read_bandwidth(threads, bytes, passes);
        EXPECT_TRUE(std::isfinite(rate)) << threads << " threads, " << bytes << " bytes";
        EXPECT_GT(rate, 0.0) << threads << " threads, " << bytes << " bytes";
    }
}

}  // namespace
}  // namespace cria::cpu
