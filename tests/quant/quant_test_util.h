#pragma once
// Helpers shared by the quant tests: reading the stored llama.cpp vectors,
// deterministic random data, and error measures.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cria/core/element_type.h"
#include "support/test_paths.h"

namespace cria::quant::test {

inline std::vector<uint8_t> read_bytes(const std::string& rel) {
    std::ifstream in(cria::test::data_path("quant/" + rel), std::ios::binary);
    EXPECT_TRUE(in.good()) << "missing test vector quant/" << rel;
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<float> read_floats(const std::string& rel) {
    const std::vector<uint8_t> bytes = read_bytes(rel);
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

inline double rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double se = 0;
    for (size_t i = 0; i < a.size(); ++i) se += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    return std::sqrt(se / static_cast<double>(a.size()));
}

// Root mean square error with per-column weights (the imatrix), over rows of `n`.
inline double weighted_rmse(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& w) {
    double se = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        se += w[i % w.size()] * d * d;
    }
    return std::sqrt(se / static_cast<double>(a.size()));
}

// Gaussian values with a fixed seed (std::mt19937 is specified bit for bit;
// the normal distribution is not, so we build it from uniforms ourselves).
inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 gen(seed);
    std::vector<float> out(n);
    for (auto& v : out) {
        float sum = 0;
        for (int k = 0; k < 4; ++k) sum += static_cast<float>(gen() >> 8) / 16777216.0f;
        v = (sum - 2.0f) * 1.7320508f * scale;
    }
    return out;
}

inline size_t row_bytes(ElementType t, int64_t n) { return static_cast<size_t>(*row_size_bytes(t, static_cast<uint64_t>(n))); }

}  // namespace cria::quant::test
