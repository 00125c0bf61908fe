// The AVX-512 activation quantisers (Q8_K, Q8_0Planar) write the very bytes
// of the scalar reference, on random vectors and on the cases where a
// different rounding or a different choice of block maximum would show:
// exact rounding ties, products that round to a tie (which a fused
// multiply-add would round the other way), maxima of both signs and equal
// magnitude, zero and tiny blocks, NaN and infinities.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cria/cpu/features.h"
#include "matmul/kernels.h"

namespace {

using cria::matmul::detail::ActivationFormat;
namespace detail = cria::matmul::detail;

struct Case {
    std::string name;
    std::vector<float> x;
};

// k values filled by `make` for each of the blocks of 256.
// How many near-tie values cases() found (the test checks there are some).
size_t near_ties = 0;

std::vector<Case> cases() {
    std::vector<Case> out;
    near_ties = 0;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    const auto filled = [&](const std::string& name, int64_t k, auto make) {
        Case c{name, std::vector<float>(static_cast<size_t>(k))};
        for (int64_t i = 0; i < k; ++i) c.x[static_cast<size_t>(i)] = make(i);
        out.push_back(std::move(c));
    };
    filled("normal", 4096, [&](int64_t) { return normal(rng); });
    filled("outliers", 768, [&](int64_t i) { return normal(rng) * (i % 97 == 0 ? 300.0f : 1.0f); });
    filled("tiny", 512, [&](int64_t) { return normal(rng) * 1e-30f; });
    filled("zeros", 256, [](int64_t) { return 0.0f; });
    filled("negative zeros", 256, [](int64_t) { return -0.0f; });
    // Q8_K: a maximum of 127 gives iscale -1, so x = m + 0.5 is an exact tie
    // (ties to even); Q8_0: amax 127 gives d = 1, id = 1, the same ties
    // (away from zero).
    filled("ties", 512, [](int64_t i) {
        if (i % 32 == 5) return 127.0f;
        return static_cast<float>(i % 255 - 127) + 0.5f * (i % 2 ? 1.0f : -1.0f);
    });
    // The largest magnitude twice, with opposite signs: the first one's sign wins.
    filled("equal maxima", 512, [&](int64_t i) {
        if (i % 256 == 17) return -3.0f;
        if (i % 256 == 200) return 3.0f;
        if (i % 32 == 3) return (i % 64 == 3) ? 3.0f : -3.0f;
        return normal(rng);
    });
    filled("half blocks zero", 512, [&](int64_t i) { return (i / 32) % 2 ? 0.0f : normal(rng); });
    // Products that round to exactly k + 0.5 while the exact product is not:
    // a fused multiply-add (one rounding) would round them the other way.
    // Q8_K: block maximum m gives iscale = -127 / m; Q8_0: d = m / 127, id = 1 / d.
    for (const bool q8_k : {true, false}) {
        const float m = 2.8241443634033203f;
        const float scale = q8_k ? -127.0f / m : 1.0f / (m / 127.0f);
        Case c{q8_k ? "near ties, Q8_K scale" : "near ties, Q8_0 scale", std::vector<float>(512, 0.0f)};
        size_t at = 1;  // index 0 of every 32 holds the maximum
        for (int target = 1; target < 120 && at < c.x.size(); ++target) {
            const double tie = (q8_k ? -1.0 : 1.0) * (target + 0.5);
            float x = static_cast<float>(tie / scale);
            for (int step = 0; step < 64; ++step, x = std::nextafter(x, 2.0f * x)) {
                const float product = scale * x;  // rounded once, as the scalar code does
                if (static_cast<double>(product) == tie && static_cast<double>(scale) * x != tie) {
                    c.x[at] = x;
                    at += at % 32 == 31 ? 2 : 1;
                    break;
                }
            }
        }
        near_ties += at - 1;
        for (size_t i = 0; i < c.x.size(); i += 32) c.x[i] = m;
        out.push_back(std::move(c));
    }
    filled("nan and inf", 768, [&](int64_t i) {
        if (i == 7) return std::numeric_limits<float>::quiet_NaN();
        if (i == 300) return std::numeric_limits<float>::infinity();
        if (i == 600) return -std::numeric_limits<float>::infinity();
        return normal(rng);
    });
    return out;
}

class ActivationAvx512 : public ::testing::TestWithParam<ActivationFormat> {};

TEST_P(ActivationAvx512, WritesTheScalarReferenceBytes) {
    if (!cria::cpu::isa_supported(cria::cpu::Isa::Avx512)) GTEST_SKIP() << "skipped: this CPU has no AVX-512";
    const ActivationFormat format = GetParam();
    const std::vector<Case> all = cases();
    ASSERT_GE(near_ties, 40u) << "too few near-tie values to test the rounding";
    for (const Case& c : all) {
        const int64_t k = static_cast<int64_t>(c.x.size());
        const size_t bytes = detail::activation_row_bytes(format, k);
        // Both buffers start from the same junk, so bytes neither writes compare equal.
        std::vector<uint8_t> want(bytes, 0xA5), got(bytes, 0xA5);
        detail::prepare_activation_row_scalar(format, c.x.data(), k, want.data());
        ASSERT_TRUE(detail::prepare_activation_row_avx512(format, c.x.data(), k, got.data()));
        for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(got[i], want[i]) << c.name << ": byte " << i << " of " << bytes;
        // The dispatching entry point gives the same bytes.
        std::vector<uint8_t> dispatched(bytes, 0xA5);
        detail::prepare_activation_row(format, c.x.data(), k, dispatched.data());
        ASSERT_EQ(dispatched, want) << c.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, ActivationAvx512, ::testing::Values(ActivationFormat::Q8_K, ActivationFormat::Q8_0Planar),
                         [](const ::testing::TestParamInfo<ActivationFormat>& info) {
                             return info.param == ActivationFormat::Q8_K ? std::string("q8_K") : std::string("q8_0_planar");
                         });

TEST(ActivationAvx512Formats, OtherFormatsAreLeftToTheReference) {
    if (!cria::cpu::isa_supported(cria::cpu::Isa::Avx512)) GTEST_SKIP() << "skipped: this CPU has no AVX-512";
    std::vector<float> x(256, 1.0f);
    std::vector<uint8_t> out(detail::activation_row_bytes(ActivationFormat::Q8_0, 256), 0);
    EXPECT_FALSE(detail::prepare_activation_row_avx512(ActivationFormat::Q8_0, x.data(), 256, out.data()));
    EXPECT_FALSE(detail::prepare_activation_row_avx512(ActivationFormat::F32, x.data(), 256, out.data()));
}

}  // namespace
