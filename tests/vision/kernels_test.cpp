// The vision kernels against float64 references on random inputs of
// awkward sizes (odd patches, images with leftover pixels, odd head sizes).

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/kernels.h"

namespace cria::vision {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// Patch columns times the kernel (the op API's matmul) is the stride-p
// convolution, computed here directly in double.
TEST(VisionKernels, PatchColumnsTimesKernelIsTheConvolution) {
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    struct Shape {
        int64_t width, height, patch, channels_out;
    };
    for (const Shape s : {Shape{23, 17, 5, 7}, Shape{14, 14, 14, 3}, Shape{31, 9, 3, 11}, Shape{8, 40, 1, 5}}) {
        const auto image = random_values(static_cast<size_t>(s.width * s.height * 3), 1);
        const int64_t p = s.patch, k = p * p * 3, gw = s.width / p, gh = s.height / p, n = gw * gh;
        const auto kernel = random_values(static_cast<size_t>(k * s.channels_out), 2);  // ggml [p, p, 3, C]
        const auto cols = image_patch_columns(image, s.width, s.height, p);
        ASSERT_EQ(static_cast<int64_t>(cols.size()), k * n);
        std::vector<float> got(static_cast<size_t>(s.channels_out * n));
        ops.matmul(ops::TensorView::contiguous(ElementType::F32, kernel.data(), {k, s.channels_out}),
                   ops::TensorView::contiguous(ElementType::F32, cols.data(), {k, n}),
                   ops::TensorView::contiguous(ElementType::F32, got.data(), {s.channels_out, n}));
        for (int64_t py = 0; py < gh; ++py)
            for (int64_t px = 0; px < gw; ++px)
                for (int64_t o = 0; o < s.channels_out; ++o) {
                    double want = 0;
                    for (int c = 0; c < 3; ++c)
                        for (int64_t ky = 0; ky < p; ++ky)
                            for (int64_t kx = 0; kx < p; ++kx)
                                want += static_cast<double>(image[static_cast<size_t>(((py * p + ky) * s.width + px * p + kx) * 3 + c)]) *
                                        kernel[static_cast<size_t>(((o * 3 + c) * p + ky) * p + kx)];
                    EXPECT_NEAR(got[static_cast<size_t>((py * gw + px) * s.channels_out + o)], want, 1e-4 * (1 + std::abs(want)))
                        << s.width << "x" << s.height << " patch " << p;
                }
    }
}

TEST(VisionKernels, PatchColumnsRefuseAnImageSmallerThanAPatch) {
    std::vector<float> image(5 * 5 * 3);
    EXPECT_THROW(image_patch_columns(image, 5, 5, 6), Error);
    EXPECT_THROW(image_patch_columns(image, 5, 4, 2), Error);  // size does not match the buffer
}

TEST(VisionKernels, RotatePairsMatchesDoubleRotation) {
    const int64_t d = 10, heads = 3, n = 7;
    const std::vector<int32_t> first{0, 2, 5, 9}, second{1, 7, 6, 3};
    const auto x0 = random_values(static_cast<size_t>(d * heads * n), 3);
    const auto angle = random_values(first.size() * n, 4);
    auto x = x0;
    rotate_pairs(x, d, heads, n, first, second, angle);
    for (int64_t t = 0; t < n; ++t)
        for (int64_t h = 0; h < heads; ++h) {
            const size_t base = static_cast<size_t>((t * heads + h) * d);
            std::vector<double> want(x0.begin() + static_cast<std::ptrdiff_t>(base),
                                     x0.begin() + static_cast<std::ptrdiff_t>(base + d));
            for (size_t k = 0; k < first.size(); ++k) {
                const double a = angle[static_cast<size_t>(t) * first.size() + k];
                const double u = want[static_cast<size_t>(first[k])], v = want[static_cast<size_t>(second[k])];
                want[static_cast<size_t>(first[k])] = u * std::cos(a) - v * std::sin(a);
                want[static_cast<size_t>(second[k])] = u * std::sin(a) + v * std::cos(a);
            }
            for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(x[base + static_cast<size_t>(i)], want[static_cast<size_t>(i)], 1e-5);
        }
}

TEST(VisionKernels, RotatePairsRefusesPairsOutsideTheHead) {
    std::vector<float> x(8);
    const std::vector<int32_t> first{0}, bad{8};
    const std::vector<float> angle{0.5f, 0.5f};
    EXPECT_THROW(rotate_pairs(x, 4, 1, 2, first, bad, angle), Error);
    EXPECT_THROW(rotate_pairs(x, 4, 1, 2, first, first, angle), Error);
    EXPECT_THROW(rotate_pairs(x, 4, 1, 3, first, std::vector<int32_t>{1}, angle), Error);
}

TEST(VisionKernels, GeluQuickMatchesDouble) {
    auto x = random_values(1001, 5);
    x.push_back(-80.0f);
    x.push_back(80.0f);
    const auto x0 = x;
    gelu_quick(x);
    for (size_t i = 0; i < x.size(); ++i) {
        const double v = x0[i];
        EXPECT_NEAR(x[i], v / (1.0 + std::exp(-1.702 * v)), 1e-6 * (1 + std::abs(v)));
    }
}

}  // namespace
}  // namespace cria::vision
