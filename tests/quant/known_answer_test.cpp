// Hand-built blocks with values worked out on paper from the ggml layouts:
// one test per format, so a layout mistake names the format it is in.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cria/quant/blocks.h"
#include "cria/quant/quantize.h"

namespace cria::quant {
namespace {

constexpr f16_bits kF16Half = 0x3800;     // 0.5
constexpr f16_bits kF16One = 0x3C00;      // 1.0
constexpr f16_bits kF16Quarter = 0x3400;  // 0.25
constexpr f16_bits kF16MinusTwo = 0xC000; // -2.0

// The IQ4_NL code book as published in ggml-common.h, written out again here
// so that a typo in blocks.h cannot hide.
constexpr int kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// E2M1 values (not doubled).
constexpr float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

template <typename Block>
std::vector<float> dequantize_block(ElementType t, const Block& b, int n) {
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(t, &b, y.data(), n);
    return y;
}

TEST(KnownAnswer, Q4_0) {
    block_q4_0 b{};
    b.d = kF16Half;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto y = dequantize_block(ElementType::Q4_0, b, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8)) << j;         // low nibble: first half
        EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(7 - j)) << j;    // high nibble: second half
    }
}

TEST(KnownAnswer, Q4_1) {
    block_q4_1 b{};
    b.d = kF16One;
    b.m = kF16MinusTwo;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (3 << 4));
    const auto y = dequantize_block(ElementType::Q4_1, b, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], static_cast<float>(j) - 2.0f);
        EXPECT_EQ(y[j + 16], 1.0f);
    }
}

TEST(KnownAnswer, Q5_0FifthBitsComeFromQh) {
    block_q5_0 b{};
    b.d = kF16One;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (j << 4));
    const uint32_t qh = 0x0000FFFF;  // fifth bit set for values 0..15 only
    std::memcpy(b.qh, &qh, 4);
    const auto y = dequantize_block(ElementType::Q5_0, b, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], static_cast<float>(j));          // (j + 16) - 16
        EXPECT_EQ(y[j + 16], static_cast<float>(j - 16));
    }
}

TEST(KnownAnswer, Q5_1) {
    block_q5_1 b{};
    b.d = kF16Half;
    b.m = kF16One;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const uint32_t qh = 0xAAAAAAAA;  // fifth bit set for odd positions
    std::memcpy(b.qh, &qh, 4);
    const auto y = dequantize_block(ElementType::Q5_1, b, 32);
    for (int j = 0; j < 16; ++j) {
        const int q0 = j + (j % 2 ? 16 : 0);
        const int q1 = (15 - j) + ((j + 16) % 2 ? 16 : 0);
        EXPECT_EQ(y[j], 0.5f * static_cast<float>(q0) + 1.0f) << j;
        EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(q1) + 1.0f) << j;
    }
}

TEST(KnownAnswer, Q8_0AndQ8_1) {
    block_q8_0 b{};
    b.d = kF16Quarter;
    for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
    const auto y = dequantize_block(ElementType::Q8_0, b, 32);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * static_cast<float>(j * 8 - 128));

    block_q8_1 b1{};
    b1.d = kF16Quarter;
    b1.s = 0x7C00;  // the sum field plays no part in dequantization
    std::memcpy(b1.qs, b.qs, 32);
    EXPECT_EQ(dequantize_block(ElementType::Q8_1, b1, 32), y);
}

TEST(KnownAnswer, Q2_K) {
    block_q2_K b{};
    b.d = kF16One;
    b.dmin = kF16Half;
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(s | ((15 - s) << 4));
    std::memset(b.qs, 0xE4, sizeof(b.qs));  // bit pairs 0,1,2,3: plane k holds level k
    const auto y = dequantize_block(ElementType::Q2_K, b, 256);
    for (int e = 0; e < 256; ++e) {
        const int sub = e / 16;              // sub-blocks of 16 run in order
        const int level = (e % 128) / 32;    // each 32 values of a half use the next bit pair
        EXPECT_EQ(y[e], static_cast<float>(sub * level) - 0.5f * static_cast<float>(15 - sub)) << e;
    }
}

TEST(KnownAnswer, Q3_KScalesAndHighBits) {
    block_q3_K b{};
    b.d = kF16Half;
    const uint8_t scales[12] = {0x21, 0x43, 0x65, 0x87, 0xA9, 0xCB, 0xED, 0x0F, 0xE4, 0, 0, 0};
    std::memcpy(b.scales, scales, 12);
    std::memset(b.qs, 0xE4, sizeof(b.qs));
    b.hmask[0] = 0x01;  // value 0: high bit set
    b.hmask[5] = 0x02;  // value 32 + 5: high bit set
    const auto y = dequantize_block(ElementType::Q3_K, b, 256);
    // Worked out by hand: sub-block 0 has 6-bit scale 1 (-> -31), 2 has 5
    // (-> -27), 4 has 9 | 1<<4 = 25 (-> -7), 8 has 2 | 2<<4 = 34 (-> 2),
    // 12 has 10 | 3<<4 = 58 (-> 26). Values lacking the high bit are q - 4.
    EXPECT_EQ(y[0], 0.0f);                  // 0.5 * -31 * (0 - 0)
    EXPECT_EQ(y[1], 62.0f);                 // 0.5 * -31 * (0 - 4)
    EXPECT_EQ(y[37], -13.5f);               // 0.5 * -27 * (1 - 0)
    EXPECT_EQ(y[38], 40.5f);                // 0.5 * -27 * (1 - 4)
    EXPECT_EQ(y[70], 7.0f);                 // 0.5 * -7 * (2 - 4)
    EXPECT_EQ(y[130], -4.0f);               // 0.5 * 2 * (0 - 4)
    EXPECT_EQ(y[200], -26.0f);              // 0.5 * 26 * (2 - 4)
}

TEST(KnownAnswer, Q4_KSixBitScalePacking) {
    block_q4_K b{};
    b.d = kF16One;
    b.dmin = kF16Quarter;
    // Sub-blocks 0-3: scales 1,2,3,4 and mins 10,20,30,40 in bytes 0-7.
    // Sub-block 5: scale 37 = 0b10'0101, min 50 = 0b11'0010: low nibbles in
    // byte 9, top bits in the spare bits 6-7 of bytes 1 and 5.
    const uint8_t scales[12] = {1, 2 | 0x80, 3, 4, 10, 20 | 0xC0, 30, 40, 0, 0x25, 0, 0};
    std::memcpy(b.scales, scales, 12);
    std::memset(b.qs, 0x73, sizeof(b.qs));  // low nibble 3, high nibble 7
    const auto y = dequantize_block(ElementType::Q4_K, b, 256);
    EXPECT_EQ(y[0], 1 * 3 - 0.25f * 10);     // sub-block 0: low nibbles of bytes 0-31
    EXPECT_EQ(y[40], 2 * 7 - 0.25f * 20);    // sub-block 1: high nibbles of the same bytes
    EXPECT_EQ(y[100], 4 * 7 - 0.25f * 40);   // sub-block 3
    EXPECT_EQ(y[130], 0.0f);                 // sub-block 4: scale and min 0
    EXPECT_EQ(y[170], 37 * 7 - 0.25f * 50);  // sub-block 5
}

TEST(KnownAnswer, Q5_K) {
    block_q5_K b{};
    b.d = kF16One;
    b.dmin = kF16Quarter;
    const uint8_t scales[12] = {1, 2 | 0x80, 3, 4, 10, 20 | 0xC0, 30, 40, 0, 0x25, 0, 0};
    std::memcpy(b.scales, scales, 12);
    std::memset(b.qs, 0x73, sizeof(b.qs));
    std::memset(b.qh, 0x04, sizeof(b.qh));  // fifth bit only for sub-block 2 (low nibbles of chunk 1)
    const auto y = dequantize_block(ElementType::Q5_K, b, 256);
    EXPECT_EQ(y[0], 1 * 3 - 0.25f * 10);
    EXPECT_EQ(y[70], 3 * (3 + 16) - 0.25f * 30);
    EXPECT_EQ(y[100], 4 * 7 - 0.25f * 40);
    EXPECT_EQ(y[170], 37 * 7 - 0.25f * 50);
}

TEST(KnownAnswer, Q6_K) {
    block_q6_K b{};
    b.d = kF16Half;
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s - 8);
    std::memset(b.ql, 0x21, sizeof(b.ql));  // low nibble 1, high nibble 2
    std::memset(b.qh, 0xE4, sizeof(b.qh));  // high bits 0,1,2,3 for the four groups of 32
    const auto y = dequantize_block(ElementType::Q6_K, b, 256);
    // Group g of each half: ql low/high nibble with qh bits 2g..2g+1, minus 32.
    const int q[4] = {(1 | 0 << 4) - 32, (1 | 1 << 4) - 32, (2 | 2 << 4) - 32, (2 | 3 << 4) - 32};
    for (int e = 0; e < 256; ++e) {
        EXPECT_EQ(y[e], 0.5f * static_cast<float>(e / 16 - 8) * static_cast<float>(q[(e % 128) / 32])) << e;
    }
}

TEST(KnownAnswer, Q8_K) {
    block_q8_K b{};
    b.d = 0.125f;
    for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
    const auto y = dequantize_block(ElementType::Q8_K, b, 256);
    for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], 0.125f * static_cast<float>(j - 128));
}

TEST(KnownAnswer, IQ4_NLCodeBook) {
    for (int j = 0; j < 16; ++j) EXPECT_EQ(kvalues_iq4nl[j], kIq4nl[j]);
    block_iq4_nl b{};
    b.d = kF16Half;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto y = dequantize_block(ElementType::IQ4_NL, b, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * static_cast<float>(kIq4nl[j]));
        EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(kIq4nl[15 - j]));
    }
}

TEST(KnownAnswer, IQ4_XSSubScales) {
    block_iq4_xs b{};
    b.d = kF16One;
    const uint8_t low[4] = {0x21, 0x43, 0x65, 0x87};
    std::memcpy(b.scales_l, low, 4);
    b.scales_h = 0xE4E4;
    std::memset(b.qs, 0x9F, sizeof(b.qs));  // low nibble 15 (113), high nibble 9 (13)
    const auto y = dequantize_block(ElementType::IQ4_XS, b, 256);
    // Sub-scale ib: nibble ib of scales_l | bits 2ib..2ib+1 of scales_h << 4, minus 32.
    const int sub[8] = {1 - 32, 18 - 32, 35 - 32, 52 - 32, 5 - 32, 22 - 32, 39 - 32, 56 - 32};
    for (int e = 0; e < 256; ++e) {
        const int code = (e % 32) < 16 ? 113 : 13;
        EXPECT_EQ(y[e], static_cast<float>(sub[e / 32]) * static_cast<float>(code)) << e;
    }
}

TEST(KnownAnswer, MXFP4E8M0Scale) {
    block_mxfp4 b{};
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const struct { uint8_t e; float scale; } cases[] = {
        {127, 1.0f}, {130, 8.0f}, {120, 1.0f / 128}, {1, std::ldexp(1.0f, -126)}, {0, std::ldexp(1.0f, -127)},
        {254, std::ldexp(1.0f, 127)},
    };
    for (const auto& c : cases) {
        b.e = c.e;
        const auto y = dequantize_block(ElementType::MXFP4, b, 32);
        for (int j = 0; j < 16; ++j) {
            EXPECT_EQ(y[j], kE2M1[j] * c.scale) << int(c.e) << " " << j;
            EXPECT_EQ(y[j + 16], kE2M1[15 - j] * c.scale) << int(c.e) << " " << j;
        }
    }
}

// ---- Quantizing values that the format represents exactly -------------------

TEST(KnownAnswer, Q4_0QuantizesAGridExactly) {
    float x[32];
    for (int j = 0; j < 32; ++j) x[j] = 0.25f * static_cast<float>(j % 16 - 8);  // -2 comes first: d = 0.25
    block_q4_0 b{};
    quantize_row(ElementType::Q4_0, x, &b, 32);
    EXPECT_EQ(b.d, kF16Quarter);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
}

TEST(KnownAnswer, Q8_0RoundsHalfAwayFromZero) {
    float x[32] = {};
    x[0] = -127.0f;  // d = 1
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.49f;
    block_q8_0 b{};
    quantize_row(ElementType::Q8_0, x, &b, 32);
    EXPECT_EQ(b.d, kF16One);
    EXPECT_EQ(b.qs[0], -127);
    EXPECT_EQ(b.qs[1], 3);
    EXPECT_EQ(b.qs[2], -3);
    EXPECT_EQ(b.qs[3], 0);
}

TEST(KnownAnswer, IQ4_NLQuantizesTheCodeBookExactly) {
    float x[32];
    for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(kIq4nl[j % 16]);
    block_iq4_nl b{};
    quantize_row(ElementType::IQ4_NL, x, &b, 32);
    EXPECT_EQ(b.d, kF16Half);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
}

TEST(KnownAnswer, MXFP4QuantizesE2M1ValuesExactly) {
    float x[32];
    for (int j = 0; j < 32; ++j) x[j] = 4.0f * kE2M1[j % 8];  // amax 24: exponent 4 - 2, scale 4
    block_mxfp4 b{};
    quantize_row(ElementType::MXFP4, x, &b, 32);
    EXPECT_EQ(b.e, 129);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], (j % 8) | ((j % 8) << 4)) << j;
}

// Below the E8M0 range ggml's exponent wraps around (to a huge scale that
// zeroes the block); cria clamps it to the smallest scale instead.
TEST(KnownAnswer, MXFP4TinyValuesClampTheExponent) {
    float x[32];
    for (int j = 0; j < 32; ++j) x[j] = std::ldexp(j % 2 ? -1.0f : 1.0f, -127);  // floor(log2) - 2 + 127 = -2
    block_mxfp4 b{};
    quantize_row(ElementType::MXFP4, x, &b, 32);
    EXPECT_EQ(b.e, 0);
    float y[32];
    dequantize_row(ElementType::MXFP4, &b, y, 32);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]) << j;
}

TEST(KnownAnswer, AllZeroBlocksStayZero) {
    const ElementType types[] = {ElementType::Q4_0, ElementType::Q4_1, ElementType::Q5_0, ElementType::Q5_1,
                                 ElementType::Q8_0, ElementType::Q8_1, ElementType::Q2_K, ElementType::Q3_K,
                                 ElementType::Q4_K, ElementType::Q5_K, ElementType::Q6_K, ElementType::Q8_K,
                                 ElementType::IQ4_NL, ElementType::IQ4_XS, ElementType::MXFP4};
    std::vector<float> zeros(256, 0.0f);
    for (const ElementType t : types) {
        std::vector<uint8_t> q(*row_size_bytes(t, 256), 0xAB);
        quantize_row(t, zeros.data(), q.data(), 256);
        std::vector<float> y(256, 1.0f);
        dequantize_row(t, q.data(), y.data(), 256);
        for (float v : y) ASSERT_EQ(v, 0.0f) << element_type_name(t);
    }
}

}  // namespace
}  // namespace cria::quant
