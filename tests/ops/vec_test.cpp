// The row primitives of every level against double-precision loops.
// Error bounds: sums/dots of n values in float carry ~n * 2^-24 relative error
// of the sum of magnitudes, so they are checked against 1e-5 * sum(|terms|);
// exp-based ones against 2e-6 relative (the vector exp is ~2 ulp).

#include <cmath>
#include <vector>

#include "cria/core/float16.h"
#include "ops/vec.h"
#include "ops_test_util.h"

namespace cria::ops {
namespace {

using test::all_close;
using test::awkward_sizes;
using test::random_floats;

class VecKernelsTest : public ::testing::TestWithParam<cpu::Isa> {};

TEST_P(VecKernelsTest, ReductionsMatchDouble) {
    const VecKernels& k = vec_kernels(GetParam());
    for (int64_t n : awkward_sizes()) {
        SCOPED_TRACE(n);
        const auto a = random_floats(static_cast<size_t>(n), 1);
        const auto b = random_floats(static_cast<size_t>(n), 2);
        std::vector<uint16_t> bh(b.size()), bb(b.size());
        double dot = 0, mag = 0, sq = 0, sum = 0, sum_mag = 0, dot_h = 0, dot_b = 0;
        float max = -INFINITY;
        for (size_t i = 0; i < a.size(); ++i) {
            bh[i] = f32_to_f16(b[i]);
            bb[i] = f32_to_bf16(b[i]);
            dot += static_cast<double>(a[i]) * b[i];
            dot_h += static_cast<double>(a[i]) * f16_to_f32(bh[i]);
            dot_b += static_cast<double>(a[i]) * bf16_to_f32(bb[i]);
            mag += std::fabs(static_cast<double>(a[i]) * b[i]);
            sq += static_cast<double>(a[i]) * a[i];
            sum += a[i];
            sum_mag += std::fabs(a[i]);
            max = std::max(max, a[i]);
        }
        EXPECT_NEAR(k.dot(a.data(), b.data(), n), dot, 1e-5 * mag);
        EXPECT_NEAR(k.dot_f16(a.data(), bh.data(), n), dot_h, 1e-5 * mag);
        EXPECT_NEAR(k.dot_bf16(a.data(), bb.data(), n), dot_b, 1e-5 * mag);
        EXPECT_NEAR(k.sum_squares(a.data(), n), sq, 1e-5 * sq);
        EXPECT_NEAR(k.sum(a.data(), n), sum, 1e-5 * sum_mag);
        EXPECT_EQ(k.max(a.data(), n), max);
    }
    EXPECT_EQ(k.max(nullptr, 0), -INFINITY);
}

TEST_P(VecKernelsTest, MapsMatchDouble) {
    const VecKernels& k = vec_kernels(GetParam());
    for (int64_t n : awkward_sizes()) {
        SCOPED_TRACE(n);
        const size_t un = static_cast<size_t>(n);
        const auto a = random_floats(un, 3, -8.0f, 8.0f);
        const auto b = random_floats(un, 4);
        std::vector<uint16_t> bh(un), bb(un);
        for (size_t i = 0; i < un; ++i) bh[i] = f32_to_f16(b[i]), bb[i] = f32_to_bf16(b[i]);
        std::vector<float> y(un), want(un);
        // The output buffer is one larger with a guard value: tails must not write past n.
        std::vector<float> guarded(un + 1, 1234.5f);

        k.scale(a.data(), 0.37f, guarded.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = a[i] * 0.37f;
        EXPECT_TRUE(all_close(guarded.data(), want.data(), un, 0, 1e-7));
        EXPECT_EQ(guarded[un], 1234.5f);

        k.scale_mul(a.data(), 0.5f, b.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(0.5 * a[i] * b[i]);
        EXPECT_TRUE(all_close(y, want, 0, 2e-7));

        y = b;
        k.axpy(-1.25f, a.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(b[i] - 1.25 * a[i]);
        EXPECT_TRUE(all_close(y, want, 1e-6, 1e-6));

        y = b;
        k.axpy_f16(0.75f, bh.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(b[i] + 0.75 * f16_to_f32(bh[i]));
        EXPECT_TRUE(all_close(y, want, 1e-6, 1e-6));

        y = b;
        k.axpy_bf16(0.75f, bb.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(b[i] + 0.75 * bf16_to_f32(bb[i]));
        EXPECT_TRUE(all_close(y, want, 1e-6, 1e-6));

        k.add(a.data(), b.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = a[i] + b[i];
        EXPECT_TRUE(all_close(y, want, 0, 0));
        k.mul(a.data(), b.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = a[i] * b[i];
        EXPECT_TRUE(all_close(y, want, 0, 0));

        const float shift = 3.0f;
        const float s = k.exp_shift_sum(a.data(), shift, y.data(), n);
        double total = 0;
        for (size_t i = 0; i < un; ++i) {
            want[i] = static_cast<float>(std::exp(static_cast<double>(a[i]) - shift));
            total += want[i];
        }
        EXPECT_TRUE(all_close(y, want, 0, 2e-6));
        EXPECT_NEAR(s, total, 1e-5 * total);

        k.silu(a.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(a[i] / (1.0 + std::exp(-static_cast<double>(a[i]))));
        EXPECT_TRUE(all_close(y, want, 1e-7, 3e-6));

        k.swiglu(a.data(), b.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(b[i] * a[i] / (1.0 + std::exp(-static_cast<double>(a[i]))));
        EXPECT_TRUE(all_close(y, want, 1e-7, 3e-6));

        auto gelu_ref = [](double v) {
            return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        };
        k.gelu(a.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(gelu_ref(a[i]));
        EXPECT_TRUE(all_close(y, want, 1e-7, 3e-6));
        k.geglu(a.data(), b.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = static_cast<float>(gelu_ref(a[i]) * b[i]);
        EXPECT_TRUE(all_close(y, want, 1e-7, 3e-6));

        k.f16_to_f32(bh.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = f16_to_f32(bh[i]);
        EXPECT_TRUE(all_close(y, want, 0, 0));
        k.bf16_to_f32(bb.data(), y.data(), n);
        for (size_t i = 0; i < un; ++i) want[i] = bf16_to_f32(bb[i]);
        EXPECT_TRUE(all_close(y, want, 0, 0));
    }
}

TEST_P(VecKernelsTest, ExpHandlesExtremes) {
    const VecKernels& k = vec_kernels(GetParam());
    const std::vector<float> x{-INFINITY, -1000.0f, -87.0f, -20.0f, 0.0f, 1e-8f, 20.0f, 80.0f, 88.0f, 1000.0f, INFINITY, NAN,
                               -0.5f, 0.5f, 10.0f, -10.0f, 3.0f};
    std::vector<float> y(x.size());
    k.exp_shift_sum(x.data(), 0.0f, y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        SCOPED_TRACE(x[i]);
        if (std::isnan(x[i])) {
            EXPECT_TRUE(std::isnan(y[i]));
        } else if (x[i] > 88.5f) {
            EXPECT_EQ(y[i], INFINITY);
        } else if (x[i] < -88.0f) {
            EXPECT_EQ(y[i], 0.0f);
        } else {
            EXPECT_NEAR(y[i], std::exp(static_cast<double>(x[i])), 3e-7 * std::exp(static_cast<double>(x[i])));
        }
    }
    // SiLU of large magnitudes stays finite: x for large x, -0 for very negative.
    const std::vector<float> big{-200.0f, -90.0f, 90.0f, 200.0f};
    std::vector<float> out(big.size());
    k.silu(big.data(), out.data(), 4);
    EXPECT_NEAR(out[0], 0.0f, 1e-30);
    EXPECT_NEAR(out[1], 0.0f, 1e-30);
    EXPECT_FLOAT_EQ(out[2], 90.0f);
    EXPECT_FLOAT_EQ(out[3], 200.0f);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, VecKernelsTest, ::testing::ValuesIn(test::runnable_isas()),
                         [](const auto& info) { return std::string(cpu::isa_name(info.param)); });

}  // namespace
}  // namespace cria::ops
