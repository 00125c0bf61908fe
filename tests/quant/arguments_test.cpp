// Bad arguments to the quantize API throw cria::Error instead of misbehaving.

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/quant/quantize.h"

namespace cria::quant {
namespace {

TEST(QuantArguments, UnknownTypeIdThrows) {
    const auto bogus = static_cast<ElementType>(4);  // Q4_2, removed from ggml
    std::vector<float> f(32);
    std::vector<uint8_t> q(64);
    EXPECT_FALSE(can_dequantize(bogus));
    EXPECT_FALSE(can_quantize(bogus));
    EXPECT_THROW(dequantize_row(bogus, q.data(), f.data(), 32), Error);
    EXPECT_THROW(quantize_row(bogus, f.data(), q.data(), 32), Error);
    EXPECT_THROW(quantize_row(static_cast<ElementType>(9999), f.data(), q.data(), 32), Error);
}

TEST(QuantArguments, NegativeCountsThrow) {
    std::vector<float> f(4);
    std::vector<uint8_t> q(16);
    EXPECT_THROW(dequantize_row(ElementType::F32, q.data(), f.data(), -1), Error);
    EXPECT_THROW(quantize_row(ElementType::F16, f.data(), q.data(), -4), Error);
    EXPECT_THROW(quantize_rows(ElementType::F16, f.data(), q.data(), -1, 4), Error);
}

const ElementType kSupported[] = {
    ElementType::F32,  ElementType::F16,  ElementType::BF16, ElementType::Q4_0,   ElementType::Q4_1,   ElementType::Q5_0,
    ElementType::Q5_1, ElementType::Q8_0, ElementType::Q8_1, ElementType::Q2_K,   ElementType::Q3_K,   ElementType::Q4_K,
    ElementType::Q5_K, ElementType::Q6_K, ElementType::Q8_K, ElementType::IQ4_NL, ElementType::IQ4_XS, ElementType::MXFP4,
};

TEST(QuantArguments, SupportedTypes) {
    for (const ElementType t : kSupported) {
        EXPECT_TRUE(can_dequantize(t)) << element_type_name(t);
        EXPECT_TRUE(can_quantize(t)) << element_type_name(t);
    }
}

TEST(QuantArguments, KnownButUnsupportedTypesThrowNamingTheType) {
    std::vector<float> f(256);
    std::vector<uint8_t> q(1024);
    for (const ElementType t : {ElementType::IQ2_XXS, ElementType::IQ1_S, ElementType::IQ3_S, ElementType::TQ2_0,
                                ElementType::I8, ElementType::F64}) {
        EXPECT_FALSE(can_dequantize(t));
        EXPECT_FALSE(can_quantize(t));
        try {
            dequantize_row(t, q.data(), f.data(), 256);
            ADD_FAILURE() << "no exception for " << element_type_name(t);
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(element_type_name(t))), std::string::npos) << e.what();
        }
        EXPECT_THROW(quantize_row(t, f.data(), q.data(), 256), Error);
    }
}

TEST(QuantArguments, CountsThatAreNotWholeBlocksThrow) {
    std::vector<float> f(512);
    std::vector<uint8_t> q(2048);
    for (const ElementType t : kSupported) {
        const int64_t block = element_type_info(t)->block_size;
        if (block == 1) continue;
        for (const int64_t n : {int64_t{1}, block - 1, block + 1, block + block / 2}) {
            EXPECT_THROW(dequantize_row(t, q.data(), f.data(), n), Error) << element_type_name(t) << " n=" << n;
            EXPECT_THROW(quantize_row(t, f.data(), q.data(), n), Error) << element_type_name(t) << " n=" << n;
            EXPECT_THROW(quantize_rows(t, f.data(), q.data(), 1, n), Error) << element_type_name(t) << " n=" << n;
        }
        EXPECT_NO_THROW(quantize_row(t, f.data(), q.data(), block)) << element_type_name(t);
    }
}

TEST(QuantArguments, MessageExplainsTheBlockSize) {
    std::vector<float> f(64);
    std::vector<uint8_t> q(64);
    try {
        quantize_row(ElementType::Q4_0, f.data(), q.data(), 33);
        FAIL() << "no exception";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("q4_0"), std::string::npos) << what;
        EXPECT_NE(what.find("32"), std::string::npos) << what;
        EXPECT_NE(what.find("33"), std::string::npos) << what;
    }
}

// NaN and infinity in the input give some bytes, never undefined behaviour
// (run under UBSan) nor a crash.
TEST(QuantArguments, NonFiniteInputsDoNotCrash) {
    std::vector<float> x(256, 1.0f);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[100] = std::numeric_limits<float>::infinity();
    x[200] = -std::numeric_limits<float>::infinity();
    std::vector<float> importance(256, 1.0f);
    std::vector<uint8_t> q(1024);
    std::vector<float> y(256);
    for (const ElementType t : kSupported) {
        EXPECT_NO_THROW(quantize_row(t, x.data(), q.data(), 256)) << element_type_name(t);
        EXPECT_NO_THROW(quantize_row(t, x.data(), q.data(), 256, importance.data())) << element_type_name(t);
        EXPECT_NO_THROW(dequantize_row(t, q.data(), y.data(), 256)) << element_type_name(t);
    }
}

TEST(QuantArguments, ZeroValuesIsANoOp) {
    EXPECT_NO_THROW(dequantize_row(ElementType::F16, nullptr, nullptr, 0));
    EXPECT_NO_THROW(quantize_row(ElementType::F16, nullptr, nullptr, 0));
}

}  // namespace
}  // namespace cria::quant
