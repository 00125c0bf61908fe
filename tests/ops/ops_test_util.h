#pragma once
// Shared helpers for the op tests: deterministic random data (never zero),
// the list of instruction-set levels this machine can run, and a comparison
// that reports the worst element and never lets a NaN pass.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cria/cpu/features.h"

namespace cria::ops::test {

// The awkward sizes every kernel is tried with.
inline const std::vector<int64_t>& awkward_sizes() {
    static const std::vector<int64_t> sizes{1, 7, 31, 33, 255, 257, 4097};
    return sizes;
}

// Every level the CPU supports, lowest first.
inline std::vector<cpu::Isa> runnable_isas() {
    std::vector<cpu::Isa> out;
    for (int i = 0; i < cpu::kIsaCount; ++i) {
        if (cpu::isa_supported(static_cast<cpu::Isa>(i))) out.push_back(static_cast<cpu::Isa>(i));
    }
    return out;
}

// Uniform in [lo, hi], with values too close to zero pushed away from it.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) {
        do {
            x = dist(rng);
        } while (std::fabs(x) < 1e-3f);
    }
    return v;
}

// Fails with the worst index when |actual - expected| > abs_tol + rel_tol * |expected|,
// or when either side is NaN or infinite.
inline ::testing::AssertionResult all_close(const float* actual, const float* expected, size_t n, double abs_tol,
                                            double rel_tol) {
    double worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(actual[i]) || !std::isfinite(expected[i])) {
            return ::testing::AssertionFailure() << "non-finite value at " << i << ": got " << actual[i] << ", expected "
                                                 << expected[i];
        }
        const double err = std::fabs(static_cast<double>(actual[i]) - expected[i]);
        const double allowed = abs_tol + rel_tol * std::fabs(static_cast<double>(expected[i]));
        if (err - allowed > worst) {
            worst = err - allowed;
            worst_i = i;
        }
    }
    if (worst > 0) {
        return ::testing::AssertionFailure() << "element " << worst_i << " of " << n << ": got " << actual[worst_i]
                                             << ", expected " << expected[worst_i] << " (over tolerance by " << worst << ")";
    }
    return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult all_close(const std::vector<float>& actual, const std::vector<float>& expected,
                                            double abs_tol, double rel_tol) {
    if (actual.size() != expected.size()) return ::testing::AssertionFailure() << "sizes differ";
    return all_close(actual.data(), expected.data(), actual.size(), abs_tol, rel_tol);
}

inline std::string isa_label(cpu::Isa isa) { return "isa=" + std::string(cpu::isa_name(isa)); }

}  // namespace cria::ops::test
