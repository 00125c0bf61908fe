// Round trips on fixed random data: error bounds per type, imatrix benefit,
// row-by-row equals many-rows, and re-quantizing dequantized bytes.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cria/quant/quantize.h"
#include "quant/quant_test_util.h"

namespace cria::quant {
namespace {

using namespace cria::quant::test;

constexpr int64_t kRows = 16;
constexpr int64_t kCols = 1024;

struct Bound {
    ElementType type;
    // RMSE of llama.cpp's quantize + dequantize on exactly this data (16 rows
    // of 1024 unit-variance values, random_values(seed 42)), measured by
    // compiling llama.cpp's ggml-quants.c functions (see tests/data/quant/
    // README.md). cria measures the same figures (its bytes are identical), so
    // the bound is llama.cpp's figure plus a hair for rounding of the printout.
    double llama_rmse;
};

// cria's measured RMSE equals llama.cpp's to the printed digits for every type.
const Bound kBounds[] = {
    {ElementType::Q4_0, 0.0809664}, {ElementType::Q4_1, 0.0750813}, {ElementType::Q5_0, 0.0402151},
    {ElementType::Q5_1, 0.0364568}, {ElementType::Q8_0, 0.00503262}, {ElementType::Q8_1, 0.00503262},
    {ElementType::Q2_K, 0.286752},  {ElementType::Q3_K, 0.144983},  {ElementType::Q4_K, 0.0686806},
    {ElementType::Q5_K, 0.0348617}, {ElementType::Q6_K, 0.0169662}, {ElementType::Q8_K, 0.00621008},
    {ElementType::IQ4_NL, 0.0732519}, {ElementType::IQ4_XS, 0.0737942}, {ElementType::MXFP4, 0.113044},
};

class RoundTrip : public testing::TestWithParam<Bound> {};

std::string bound_name(const testing::TestParamInfo<Bound>& info) { return std::string(element_type_name(info.param.type)); }

TEST_P(RoundTrip, ErrorWithinLlamaCppsOnTheSameData) {
    const ElementType t = GetParam().type;
    const std::vector<float> x = random_values(kRows * kCols, 42);
    std::vector<uint8_t> q(kRows * row_bytes(t, kCols));
    quantize_rows(t, x.data(), q.data(), kRows, kCols);
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), kRows * kCols);
    const double measured = rmse(x, y);
    EXPECT_LE(measured, GetParam().llama_rmse * (1 + 1e-5));
    EXPECT_GT(measured, 0.0);  // a quantizer that loses nothing is lying
}

// Many rows at once give the same bytes as one row at a time.
TEST_P(RoundTrip, QuantizeRowsMatchesQuantizeRow) {
    const ElementType t = GetParam().type;
    const std::vector<float> x = random_values(3 * 512, 7);
    const size_t rb = row_bytes(t, 512);
    std::vector<uint8_t> together(3 * rb), single(3 * rb);
    EXPECT_EQ(quantize_rows(t, x.data(), together.data(), 3, 512), 3 * rb);
    for (int r = 0; r < 3; ++r) quantize_row(t, x.data() + r * 512, single.data() + r * rb, 512);
    EXPECT_EQ(together, single);
}

INSTANTIATE_TEST_SUITE_P(Types, RoundTrip, testing::ValuesIn(kBounds), bound_name);

// An importance matrix shifts accuracy towards the columns that matter: the
// importance-weighted error drops for every type that uses it.
TEST(RoundTripImatrix, ImportanceLowersWeightedError) {
    const std::vector<float> x = read_floats("random.f32");
    const std::vector<float> w = read_floats("random.imatrix.f32");
    ASSERT_EQ(w.size(), 1024u);
    const int64_t rows = static_cast<int64_t>(x.size()) / 1024;
    for (const ElementType t : {ElementType::Q4_0, ElementType::Q4_1, ElementType::Q5_0, ElementType::Q5_1,
                                ElementType::Q2_K, ElementType::Q3_K, ElementType::Q4_K, ElementType::Q5_K,
                                ElementType::Q6_K, ElementType::IQ4_NL, ElementType::IQ4_XS}) {
        ASSERT_TRUE(uses_importance(t));
        std::vector<uint8_t> q(static_cast<size_t>(rows) * row_bytes(t, 1024));
        std::vector<float> plain(x.size()), weighted(x.size());
        quantize_rows(t, x.data(), q.data(), rows, 1024);
        dequantize_row(t, q.data(), plain.data(), static_cast<int64_t>(x.size()));
        quantize_rows(t, x.data(), q.data(), rows, 1024, w.data());
        dequantize_row(t, q.data(), weighted.data(), static_cast<int64_t>(x.size()));
        EXPECT_LT(weighted_rmse(x, weighted, w), weighted_rmse(x, plain, w)) << element_type_name(t);
    }
    for (const ElementType t : {ElementType::Q8_0, ElementType::Q8_K, ElementType::MXFP4, ElementType::F16}) {
        EXPECT_FALSE(uses_importance(t)) << element_type_name(t);
    }
}

// Values that came out of a quantizer quantize back to the same bytes: the
// scale is recovered from the largest value and every level sits on the grid.
// This holds for the single-scale types with a plain rounding rule, on data
// whose scales are normal f16 numbers (the "random" set; the "awkward" set has
// blocks whose f16 scale underflows, which cannot round-trip). It does not
// hold for Q8_1 (its sum field uses the unrounded scale) nor for the searched
// formats (K-quants, IQ4), whose search may settle on another optimum.
TEST(RoundTripRequantize, LlamaCppBytesSurviveDequantizeAndQuantize) {
    for (const ElementType t : {ElementType::Q4_0, ElementType::Q4_1, ElementType::Q5_0, ElementType::Q5_1,
                                ElementType::Q8_0, ElementType::MXFP4}) {
        const std::vector<uint8_t> theirs = read_bytes("random." + std::string(element_type_name(t)) + ".q");
        const int64_t n = 8 * 1024;
        ASSERT_EQ(theirs.size(), row_bytes(t, n));
        std::vector<float> y(static_cast<size_t>(n));
        dequantize_row(t, theirs.data(), y.data(), n);
        std::vector<uint8_t> again(theirs.size());
        quantize_row(t, y.data(), again.data(), n);
        EXPECT_EQ(again, theirs) << element_type_name(t);
    }
}

// Per-value error of the float types: half an ulp of the target format.
TEST(RoundTripFloat, RelativeErrorIsHalfAnUlp) {
    const std::vector<float> x = random_values(4096, 3, 100.0f);
    for (const auto& [t, eps] : {std::pair{ElementType::F16, std::ldexp(1.0, -11)}, std::pair{ElementType::BF16, std::ldexp(1.0, -8)}}) {
        std::vector<uint16_t> q(x.size());
        std::vector<float> y(x.size());
        quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
        dequantize_row(t, q.data(), y.data(), static_cast<int64_t>(x.size()));
        for (size_t i = 0; i < x.size(); ++i) {
            if (std::fabs(x[i]) < 1e-3f) continue;  // f16 subnormals have absolute, not relative, precision
            ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * eps) << element_type_name(t) << " " << x[i];
        }
    }
}

}  // namespace
}  // namespace cria::quant
