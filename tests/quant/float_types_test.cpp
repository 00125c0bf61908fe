// F16 and BF16 through the quantize API: round to nearest even, and the edge
// cases (overflow to infinity, subnormals, NaN, signed zero).

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "cria/quant/quantize.h"

namespace cria::quant {
namespace {

uint16_t to_f16(float x) {
    uint16_t h = 0;
    quantize_row(ElementType::F16, &x, &h, 1);
    return h;
}
uint16_t to_bf16(float x) {
    uint16_t h = 0;
    quantize_row(ElementType::BF16, &x, &h, 1);
    return h;
}
float from_f16(uint16_t h) {
    float x = 0;
    dequantize_row(ElementType::F16, &h, &x, 1);
    return x;
}
float from_bf16(uint16_t h) {
    float x = 0;
    dequantize_row(ElementType::BF16, &h, &x, 1);
    return x;
}
float bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(F16, RoundsToNearestEven) {
    EXPECT_EQ(to_f16(1.0f), 0x3C00);
    EXPECT_EQ(to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // halfway 1 | 1+2^-10: even is 1
    EXPECT_EQ(to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // halfway 1+2^-10 | 1+2^-9: even is the upper
    EXPECT_EQ(to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // just above halfway
    EXPECT_EQ(to_f16(-2.0f), 0xC000);
    EXPECT_EQ(to_f16(65504.0f), 0x7BFF);  // largest finite half
}

TEST(F16, OverflowSubnormalsAndSpecials) {
    EXPECT_EQ(to_f16(65519.0f), 0x7BFF);  // below the halfway point to 65536
    EXPECT_EQ(to_f16(65520.0f), 0x7C00);  // halfway rounds to even: infinity
    EXPECT_EQ(to_f16(1e10f), 0x7C00);
    EXPECT_EQ(to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
    EXPECT_EQ(to_f16(std::ldexp(1.0f, -24)), 0x0001);      // smallest subnormal
    EXPECT_EQ(to_f16(std::ldexp(1.0f, -25)), 0x0000);      // halfway to 0: even is 0
    EXPECT_EQ(to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);  // halfway 1 | 2 ulp: even is 2
    EXPECT_EQ(to_f16(1e-40f), 0x0000);                     // f32 subnormal
    EXPECT_EQ(to_f16(-0.0f), 0x8000);
    EXPECT_EQ(to_f16(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
    EXPECT_EQ(to_f16(-std::numeric_limits<float>::quiet_NaN()) & 0x7FFF, 0x7E00);

    EXPECT_EQ(from_f16(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(from_f16(0x03FF), 1023 * std::ldexp(1.0f, -24));
    EXPECT_EQ(from_f16(0x7BFF), 65504.0f);
    EXPECT_TRUE(std::isinf(from_f16(0x7C00)));
    EXPECT_TRUE(std::isnan(from_f16(0x7E00)));
    EXPECT_TRUE(std::signbit(from_f16(0x8000)));
}

TEST(F16, EveryHalfSurvivesTheRoundTrip) {
    std::vector<uint16_t> all(65536);
    for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> f(65536);
    std::vector<uint16_t> back(65536);
    dequantize_row(ElementType::F16, all.data(), f.data(), 65536);
    quantize_row(ElementType::F16, f.data(), back.data(), 65536);
    for (uint32_t i = 0; i < 65536; ++i) {
        const bool nan = (i & 0x7C00) == 0x7C00 && (i & 0x03FF) != 0;
        if (nan) {
            EXPECT_TRUE(std::isnan(f[i]));
        } else {
            ASSERT_EQ(back[i], all[i]) << i;
        }
    }
}

TEST(BF16, RoundsToNearestEven) {
    EXPECT_EQ(to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // halfway: even is 1
    EXPECT_EQ(to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // halfway: even is the upper
    EXPECT_EQ(to_bf16(bits(0x3F808001)), 0x3F81);                 // just above halfway
    EXPECT_EQ(to_bf16(-2.0f), 0xC000);
}

TEST(BF16, OverflowSubnormalsAndSpecials) {
    EXPECT_EQ(to_bf16(bits(0x7F7FFFFF)), 0x7F80);  // largest float rounds up to infinity
    EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(to_bf16(bits(0x00000001)), 0x0000);
    EXPECT_EQ(to_bf16(bits(0x00008000)), 0x0000);  // halfway: even is 0
    EXPECT_EQ(to_bf16(bits(0x00018000)), 0x0002);  // halfway: even is 2
    EXPECT_EQ(to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(to_bf16(bits(0x7F800001)), 0x7FC0);  // signalling NaN with a low payload stays a NaN, quiet
    EXPECT_EQ(to_bf16(bits(0xFFC00000)), 0xFFC0);

    EXPECT_EQ(from_bf16(0x0001), bits(0x00010000));
    EXPECT_EQ(from_bf16(0x3F80), 1.0f);
    EXPECT_TRUE(std::isinf(from_bf16(0xFF80)));
    EXPECT_TRUE(std::isnan(from_bf16(0x7FC0)));
}

TEST(F32, IsACopy) {
    const float x[3] = {1.5f, -0.0f, std::numeric_limits<float>::infinity()};
    float q[3] = {}, y[3] = {};
    quantize_row(ElementType::F32, x, q, 3);
    dequantize_row(ElementType::F32, q, y, 3);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(x[i]));
}

}  // namespace
}  // namespace cria::quant
