// The row primitives of every level against double-precision loops.
// Error bounds: sums/dots of n values in float carry ~n * 2^-24 relative error
// of the sum of magnitudes, so they are checked against 1e-5 * sum(|terms|);
// exp-based ones against 2e-6 relative (the vector exp is ~2 ulp).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
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

        {
            // Weighted sum of 5 rows (row stride n + 3 values), in all three kinds.
            const int64_t count = 5, stride = n + 3;
            const auto rows = random_floats(static_cast<size_t>(count * stride), 9);
            const auto p = random_floats(static_cast<size_t>(count), 10, 0.0f, 1.0f);
            std::vector<uint16_t> rows_h(rows.size()), rows_b(rows.size());
            for (size_t i = 0; i < rows.size(); ++i) rows_h[i] = f32_to_f16(rows[i]), rows_b[i] = f32_to_bf16(rows[i]);
            const auto check = [&](auto fn, const void* data, size_t elem, auto value_of) {
                std::vector<float> g(un + 1, 1234.5f);
                std::copy(b.begin(), b.end(), g.begin());
                fn(p.data(), data, static_cast<size_t>(stride) * elem, count, g.data(), n);
                for (size_t i = 0; i < un; ++i) {
                    double w = b[i];
                    for (int64_t j = 0; j < count; ++j) w += static_cast<double>(p[j]) * value_of(static_cast<size_t>(j * stride) + i);
                    want[i] = static_cast<float>(w);
                }
                EXPECT_TRUE(all_close(g.data(), want.data(), un, 1e-6, 1e-6)) << "n=" << n;
                EXPECT_EQ(g[un], 1234.5f);
            };
            // Scores of the query a against the same rows.
            const auto check_dots = [&](auto fn, const void* data, size_t elem, auto value_of) {
                std::vector<float> out(static_cast<size_t>(count) + 1, 1234.5f);
                fn(a.data(), data, static_cast<size_t>(stride) * elem, count, out.data(), n);
                for (int64_t j = 0; j < count; ++j) {
                    double d = 0, mag = 0;
                    for (size_t i = 0; i < un; ++i) {
                        d += static_cast<double>(a[i]) * value_of(static_cast<size_t>(j * stride) + i);
                        mag += std::fabs(static_cast<double>(a[i]) * value_of(static_cast<size_t>(j * stride) + i));
                    }
                    EXPECT_TRUE(std::fabs(out[static_cast<size_t>(j)] - d) <= 1e-6 * mag + 1e-6) << "n=" << n << " j=" << j;
                }
                EXPECT_EQ(out[static_cast<size_t>(count)], 1234.5f);
            };
            check_dots(k.dot_rows, rows.data(), 4, [&](size_t i) { return static_cast<double>(rows[i]); });
            check_dots(k.dot_rows_f16, rows_h.data(), 2, [&](size_t i) { return static_cast<double>(f16_to_f32(rows_h[i])); });
            check_dots(k.dot_rows_bf16, rows_b.data(), 2, [&](size_t i) { return static_cast<double>(bf16_to_f32(rows_b[i])); });
            check(k.weighted_rows, rows.data(), 4, [&](size_t i) { return static_cast<double>(rows[i]); });
            check(k.weighted_rows_f16, rows_h.data(), 2, [&](size_t i) { return static_cast<double>(f16_to_f32(rows_h[i])); });
            check(k.weighted_rows_bf16, rows_b.data(), 2, [&](size_t i) { return static_cast<double>(bf16_to_f32(rows_b[i])); });
        }

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

// GELU-erf against 0.5 x erfc(-x / sqrt 2) in double (the erfc form: 1 + erf
// in double cancels for x below about -7, so ReferenceOps' formula would itself
// be off there). Bound: kGeluErfUlps ulp of the exact value; where the exact
// value is below FLT_MIN (x < -13.2) the result may be flushed to 0, so there
// the bound is FLT_MIN absolute. Measured worst on the sweep below: AVX2 and
// AVX-512 4.5 ulp (x = -13.1, the exp's lower end, and x = -6.8; under 4 ulp
// for x > -3), scalar (libm in double) 0.5 ulp.
constexpr double kGeluErfUlps = 6.0;

double gelu_erf_exact(float x) { return 0.5 * x * std::erfc(-static_cast<double>(x) * 0.70710678118654752440); }

// Error of `got` in ulps of the exact value (0 when within the flush allowance).
double gelu_erf_ulps(float got, double want) {
    const double err = std::fabs(static_cast<double>(got) - want);
    if (std::fabs(want) < FLT_MIN) return err <= FLT_MIN ? 0.0 : INFINITY;
    const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
    return err / ulp;
}

TEST_P(VecKernelsTest, GeluErfWithinFewUlps) {
    const VecKernels& k = vec_kernels(GetParam());
    std::vector<float> x;
    // Every region and boundary of the approximation, densely.
    for (int i = -300000; i <= 300000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
    for (float v = -30.0f; v <= 30.0f; v += 0.0007f) x.push_back(v);
    for (float b : {0.75f, 3.0f, 13.2f, 14.0f})
        for (float d : {-2e-7f, 0.0f, 2e-7f}) x.push_back(b + d), x.push_back(-(b + d));
    // Tiny, denormal and huge magnitudes.
    for (float v : {1e-30f, 1e-38f, 1e-41f, 1e-45f, 0.0f, 1e10f, 3e38f, FLT_MAX}) x.push_back(v), x.push_back(-v);
    double worst = 0;
    float worst_x = 0;
    for (int64_t n : awkward_sizes()) {
        // Random positions in [-30, 30] at each awkward size (tails included).
        auto r = random_floats(static_cast<size_t>(n), 21, -30.0f, 30.0f);
        x.insert(x.end(), r.begin(), r.end());
        std::vector<float> y(static_cast<size_t>(n) + 1, 1234.5f);
        k.gelu_erf(r.data(), y.data(), n);
        EXPECT_EQ(y[static_cast<size_t>(n)], 1234.5f) << "wrote past n = " << n;
        for (int64_t i = 0; i < n; ++i) {
            const double e = gelu_erf_ulps(y[static_cast<size_t>(i)], gelu_erf_exact(r[static_cast<size_t>(i)]));
            if (!(e <= worst)) worst = e, worst_x = r[static_cast<size_t>(i)];
        }
    }
    std::vector<float> y(x.size());
    k.gelu_erf(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        const double e = gelu_erf_ulps(y[i], gelu_erf_exact(x[i]));
        if (!(e <= worst)) worst = e, worst_x = x[i];
    }
    EXPECT_LE(worst, kGeluErfUlps) << "worst at x = " << worst_x << " (" << y.size() << " values)";
    std::printf("gelu_erf %s: worst %.2f ulp at x = %.9g\n", std::string(cpu::isa_name(GetParam())).c_str(), worst,
                static_cast<double>(worst_x));
}

TEST_P(VecKernelsTest, GeluErfSpecialValues) {
    const VecKernels& k = vec_kernels(GetParam());
    const std::vector<float> x{-INFINITY, INFINITY, NAN, -NAN, 0.0f, -0.0f, -1000.0f, 1000.0f};
    std::vector<float> y(x.size(), 1.0f);
    k.gelu_erf(x.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], 0.0f);  // -0 or 0, never NaN
    EXPECT_FALSE(std::isnan(y[0]));
    EXPECT_EQ(y[1], INFINITY);
    EXPECT_TRUE(std::isnan(y[2]));  // NaN propagates, as in the scalar version
    EXPECT_TRUE(std::isnan(y[3]));
    EXPECT_EQ(y[4], 0.0f);
    EXPECT_EQ(y[5], 0.0f);
    EXPECT_EQ(y[6], 0.0f);
    EXPECT_EQ(y[7], 1000.0f);
}

// Tiled attention's softmax step on a key-major block: each column against
// a double loop over the documented rule (masked keys, a running maximum that
// grows or not, columns that have seen nothing yet and see nothing here), and
// bit for bit the same when the columns go through in other groups.
TEST_P(VecKernelsTest, SoftmaxKeyBlockMatchesDoubleColumnByColumn) {
    const VecKernels& k = vec_kernels(GetParam());
    uint32_t seed = 40;
    for (int64_t n : {1, 7, 16, 17, 40})
        for (int64_t keys : {1, 5, 64})
            for (bool masked : {false, true})
            for (float scale : {0.37f, 1.0f}) {  // 1: the scores are already scaled
                SCOPED_TRACE(::testing::Message() << "n " << n << " keys " << keys << " masked " << masked << " scale "
                                                  << scale);
                const int64_t ld = n + 3;
                auto scores = random_floats(static_cast<size_t>(keys * ld), seed++, -8.0f, 8.0f);
                std::vector<float> lo(static_cast<size_t>(n)), hi(lo.size()), max(lo.size()), sum(lo.size());
                const auto start_max = random_floats(lo.size(), seed++, -6.0f, 6.0f);
                const auto start_sum = random_floats(lo.size(), seed++, 0.5f, 3.0f);
                for (size_t c = 0; c < lo.size(); ++c) {
                    // Column 3k: nothing seen yet; 3k + 1: sees no key here.
                    lo[c] = static_cast<float>(static_cast<int64_t>(c) % keys) - 1.0f;
                    hi[c] = c % 3 == 1 ? -1.0f : static_cast<float>((static_cast<int64_t>(c) * 7) % (keys + 1));
                    max[c] = c % 3 == 0 ? -INFINITY : start_max[c];
                    sum[c] = c % 3 == 0 ? 0.0f : start_sum[c];
                }
                std::vector<float> want_s = scores, want_max = max, want_sum = sum, want_factor(lo.size());
                for (int64_t c = 0; c < n; ++c) {
                    std::vector<double> x(static_cast<size_t>(keys));
                    double m = max[c];
                    for (int64_t j = 0; j < keys; ++j) {
                        x[j] = static_cast<double>(scores[j * ld + c] * scale);
                        if (masked && (j < lo[c] || j > hi[c])) x[j] = -INFINITY;
                        m = std::max(m, x[j]);
                    }
                    const double shift = std::isinf(m) ? 0.0 : m;
                    double block = 0;
                    for (int64_t j = 0; j < keys; ++j) {
                        const double p = std::exp(x[j] - shift);
                        want_s[j * ld + c] = static_cast<float>(p);
                        block += p;
                    }
                    const double factor = m > max[c] ? std::exp(max[c] - shift) : 1.0;
                    want_factor[c] = static_cast<float>(factor);
                    want_sum[c] = static_cast<float>(sum[c] * factor + block);
                    want_max[c] = static_cast<float>(m);
                }
                std::vector<float> got_s = scores, got_max = max, got_sum = sum, got_factor(lo.size());
                k.softmax_key_block(got_s.data(), ld, keys, n, scale, masked ? lo.data() : nullptr,
                                    masked ? hi.data() : nullptr, got_max.data(), got_sum.data(), got_factor.data());
                EXPECT_TRUE(all_close(got_s, want_s, 1e-6, 4e-6));
                EXPECT_TRUE(all_close(got_sum, want_sum, 1e-6, 4e-6));
                EXPECT_TRUE(all_close(got_factor, want_factor, 1e-6, 4e-6));
                EXPECT_EQ(got_max, want_max);
                for (size_t c = 0; c < lo.size(); ++c) {
                    if (want_max[c] == max[c]) {
                        EXPECT_EQ(got_factor[c], 1.0f) << "column " << c;
                    }
                }

                // The columns in groups of 3 (across vector boundaries): the same bits.
                std::vector<float> part_s = scores, part_max = max, part_sum = sum, part_factor(lo.size());
                for (int64_t c0 = 0; c0 < n; c0 += 3)
                    k.softmax_key_block(part_s.data() + c0, ld, keys, std::min<int64_t>(3, n - c0), scale,
                                        masked ? lo.data() + c0 : nullptr, masked ? hi.data() + c0 : nullptr,
                                        part_max.data() + c0, part_sum.data() + c0, part_factor.data() + c0);
                EXPECT_EQ(0, std::memcmp(part_s.data(), got_s.data(), got_s.size() * sizeof(float)));
                EXPECT_EQ(0, std::memcmp(part_sum.data(), got_sum.data(), got_sum.size() * sizeof(float)));
                EXPECT_EQ(0, std::memcmp(part_factor.data(), got_factor.data(), got_factor.size() * sizeof(float)));
            }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, VecKernelsTest, ::testing::ValuesIn(test::runnable_isas()),
                         [](const auto& info) { return std::string(cpu::isa_name(info.param)); });

}  // namespace
}  // namespace cria::ops
