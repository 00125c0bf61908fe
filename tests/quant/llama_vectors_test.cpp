// Comparison with llama.cpp's own quantizers on stored vectors
// (tests/data/quant, see its README.md for how they were made):
//  - our bytes equal llama.cpp's, type by type, with and without imatrix;
//  - our dequantizer reads llama.cpp's bytes to the error llama.cpp measured;
//  - our error is never worse than llama.cpp's on the shared data.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "cria/quant/quantize.h"
#include "quant/quant_test_util.h"

namespace cria::quant {
namespace {

using namespace cria::quant::test;

struct VectorSet {
    const char* name;
    int64_t rows;
    int64_t n_per_row;
};
constexpr VectorSet kAwkward{"awkward", 6, 512};
constexpr VectorSet kRandom{"random", 8, 1024};

struct Case {
    ElementType type;
    bool imatrix;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
    return std::string(element_type_name(info.param.type)) + (info.param.imatrix ? "_imatrix" : "_plain");
}

const Case kCases[] = {
    {ElementType::Q4_0, false},  {ElementType::Q4_0, true},   {ElementType::Q4_1, false},  {ElementType::Q4_1, true},
    {ElementType::Q5_0, false},  {ElementType::Q5_0, true},   {ElementType::Q5_1, false},  {ElementType::Q5_1, true},
    {ElementType::Q8_0, false},  {ElementType::Q8_1, false},  {ElementType::Q2_K, false},  {ElementType::Q2_K, true},
    {ElementType::Q3_K, false},  {ElementType::Q3_K, true},   {ElementType::Q4_K, false},  {ElementType::Q4_K, true},
    {ElementType::Q5_K, false},  {ElementType::Q5_K, true},   {ElementType::Q6_K, false},  {ElementType::Q6_K, true},
    {ElementType::Q8_K, false},  {ElementType::IQ4_NL, false}, {ElementType::IQ4_NL, true}, {ElementType::IQ4_XS, false},
    {ElementType::IQ4_XS, true}, {ElementType::MXFP4, false},
};

std::string vector_file(const VectorSet& set, const Case& c) {
    return std::string(set.name) + "." + std::string(element_type_name(c.type)) + (c.imatrix ? ".imatrix" : "") + ".q";
}

// llama.cpp's RMSE per (set, type, variant), from rmse.txt.
double llama_rmse(const VectorSet& set, const Case& c) {
    std::ifstream in(cria::test::data_path("quant/rmse.txt"));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string s, t, v;
        double r = 0, wr = 0;
        fields >> s >> t >> v >> r >> wr;
        if (s == set.name && t == element_type_name(c.type) && v == (c.imatrix ? "imatrix" : "plain")) return r;
    }
    ADD_FAILURE() << "no llama.cpp RMSE for " << set.name << " " << element_type_name(c.type);
    return 0;
}

class LlamaVectors : public testing::TestWithParam<Case> {
protected:
    std::vector<uint8_t> ours(const VectorSet& set, const std::vector<float>& x) {
        const Case c = GetParam();
        std::vector<float> importance;
        if (c.imatrix) importance = read_floats(std::string(set.name) + ".imatrix.f32");
        std::vector<uint8_t> out(static_cast<size_t>(set.rows) * row_bytes(c.type, set.n_per_row));
        const size_t written = quantize_rows(c.type, x.data(), out.data(), set.rows, set.n_per_row,
                                             c.imatrix ? importance.data() : nullptr);
        EXPECT_EQ(written, out.size());
        return out;
    }

    void expect_identical_bytes(const VectorSet& set) {
        const Case c = GetParam();
        const std::vector<float> x = read_floats(std::string(set.name) + ".f32");
        ASSERT_EQ(x.size(), static_cast<size_t>(set.rows * set.n_per_row));
        const std::vector<uint8_t> theirs = read_bytes(vector_file(set, c));
        const std::vector<uint8_t> mine = ours(set, x);
        ASSERT_EQ(mine.size(), theirs.size());
        const size_t block_bytes = element_type_info(c.type)->type_size;
        size_t differing_blocks = 0, first = 0;
        for (size_t b = 0; b < mine.size() / block_bytes; ++b) {
            if (std::memcmp(&mine[b * block_bytes], &theirs[b * block_bytes], block_bytes) != 0) {
                if (differing_blocks++ == 0) first = b;
            }
        }
        EXPECT_EQ(differing_blocks, 0u) << set.name << ": " << differing_blocks << " of " << mine.size() / block_bytes
                                        << " blocks differ from llama.cpp, first is block " << first;
    }
};

TEST_P(LlamaVectors, AwkwardInputsGiveLlamaCppBytes) { expect_identical_bytes(kAwkward); }
TEST_P(LlamaVectors, RandomInputsGiveLlamaCppBytes) { expect_identical_bytes(kRandom); }

// Our dequantizer, applied to llama.cpp's bytes, gives exactly the error that
// llama.cpp's dequantizer gave (stored with 9 significant digits).
TEST_P(LlamaVectors, DequantizingLlamaCppBytesReproducesItsError) {
    const Case c = GetParam();
    const std::vector<float> x = read_floats("random.f32");
    const std::vector<uint8_t> theirs = read_bytes(vector_file(kRandom, c));
    std::vector<float> y(x.size());
    dequantize_row(c.type, theirs.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_NEAR(rmse(x, y), llama_rmse(kRandom, c), llama_rmse(kRandom, c) * 1e-6);
}

// Our round trip is at least as accurate as llama.cpp's on the same data.
TEST_P(LlamaVectors, ErrorAtMostLlamaCpps) {
    const Case c = GetParam();
    const std::vector<float> x = read_floats("random.f32");
    const std::vector<uint8_t> mine = ours(kRandom, x);
    std::vector<float> y(x.size());
    dequantize_row(c.type, mine.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_LE(rmse(x, y), llama_rmse(kRandom, c) * (1 + 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Types, LlamaVectors, testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace cria::quant
