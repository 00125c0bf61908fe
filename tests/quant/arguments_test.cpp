// Bad arguments to the quantize API throw cria::Error instead of misbehaving.

#include <gtest/gtest.h>

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

TEST(QuantArguments, ZeroValuesIsANoOp) {
    EXPECT_NO_THROW(dequantize_row(ElementType::F16, nullptr, nullptr, 0));
    EXPECT_NO_THROW(quantize_row(ElementType::F16, nullptr, nullptr, 0));
}

}  // namespace
}  // namespace cria::quant
