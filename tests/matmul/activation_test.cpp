// Activation quantisation: the AVX-512 Q8_0Planar quantiser writes the very
// bytes the scalar one writes (quants, f16-rounded scales, sums), on random
// vectors of several lengths and scales and on the edge cases: all zeros,
// exact halves after scaling (round half away from zero), values far apart
// in magnitude, subnormal and huge scales, infinities and NaNs.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cria/cpu/features.h"
#include "matmul/kernels.h"

namespace {

namespace mm = cria::matmul;
using cria::cpu::Isa;

std::vector<uint8_t> quantize_planar(const std::vector<float>& x, Isa limit) {
    const int64_t k = static_cast<int64_t>(x.size());
    std::vector<uint8_t> out(mm::detail::activation_row_bytes(mm::detail::ActivationFormat::Q8_0Planar, k), 0xAB);
    cria::cpu::ScopedIsaLimit scope(limit);
    mm::detail::prepare_activation_row(mm::detail::ActivationFormat::Q8_0Planar, x.data(), k, out.data());
    return out;
}

void expect_same_as_scalar(const std::vector<float>& x, const char* what) {
    const auto scalar = quantize_planar(x, Isa::Scalar);
    const auto simd = quantize_planar(x, Isa::Avx512);
    ASSERT_EQ(scalar.size(), simd.size());
    for (size_t i = 0; i < scalar.size(); ++i)
        ASSERT_EQ(scalar[i], simd[i]) << what << ": byte " << i << " of " << scalar.size() << ", k = " << x.size();
}

class Q8PlanarAvx512 : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cria::cpu::isa_supported(Isa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512";
    }
};

TEST_F(Q8PlanarAvx512, RandomVectorsMatchScalarBitForBit) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
    for (int64_t k : {32, 64, 96, 288, 2048, 4128}) {
        for (int round = 0; round < 4; ++round) {
            std::vector<float> x(static_cast<size_t>(k));
            const float magnitude = std::exp2(exponent(rng));
            for (float& v : x) v = normal(rng) * magnitude;
            expect_same_as_scalar(x, "random");
        }
    }
}

TEST_F(Q8PlanarAvx512, EdgeCasesMatchScalarBitForBit) {
    std::vector<float> zeros(64, 0.0f);
    zeros[40] = -0.0f;
    expect_same_as_scalar(zeros, "zeros");

    // Values that land on k + 0.5 after the scaling: amax 127 gives d = 1.
    std::vector<float> halves(64);
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<float>(static_cast<int>(i % 32) - 16) + 0.5f;
    halves[0] = 127.0f;
    halves[33] = -127.0f;
    expect_same_as_scalar(halves, "halves");

    std::vector<float> spread(64);
    for (size_t i = 0; i < spread.size(); ++i) spread[i] = std::ldexp(i % 2 ? 1.0f : -1.0f, static_cast<int>(i % 40) - 20);
    expect_same_as_scalar(spread, "spread");

    std::vector<float> tiny(64, std::numeric_limits<float>::denorm_min() * 3);
    tiny[5] = 1e-30f;
    expect_same_as_scalar(tiny, "subnormal scale");

    std::vector<float> huge(64, 1e38f);
    huge[7] = -3e38f;
    expect_same_as_scalar(huge, "f16 overflow of the scale");

    std::vector<float> special(96, 1.5f);
    special[3] = std::numeric_limits<float>::infinity();
    special[40] = std::numeric_limits<float>::quiet_NaN();
    special[41] = -2.0f;
    special[70] = -std::numeric_limits<float>::infinity();
    special[71] = std::numeric_limits<float>::quiet_NaN();
    expect_same_as_scalar(special, "inf and NaN");
}

}  // namespace
