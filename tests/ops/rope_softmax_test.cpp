// RoPE and softmax of CpuOps (every ISA level, 1 and 3 threads) against
// ReferenceOps.
// Error bounds: RoPE angles are computed in float with ggml's running product
// theta *= theta_scale, so the angle error grows with position (~p * 1e-7
// rad): positions stay below 600 and the bound is abs 1e-4 on values of
// magnitude ~2. Softmax: vector exp (~2 ulp) and float sums, rel 1e-5 plus
// abs 1e-7 for the tiny probabilities.

#include <cmath>
#include <numeric>
#include <vector>

#include "cria/core/float16.h"
#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::all_close;
using test::random_floats;
using RopeSoftmaxTest = test::OpsFixture;

std::vector<int32_t> random_positions(size_t n, uint32_t seed, int32_t max) {
    std::mt19937 rng(seed);
    std::vector<int32_t> p(n);
    for (int32_t& x : p) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(max));
    return p;
}

TEST_P(RopeSoftmaxTest, RopeVariants) {
    const int64_t head_dim = 64, n_heads = 3, n_tokens = 5;
    const size_t total = static_cast<size_t>(head_dim * n_heads * n_tokens);
    const auto x = random_floats(total, 20);
    const auto pos = random_positions(4 * n_tokens, 21, 600);
    const auto factors = random_floats(32, 22, 1.0f, 8.0f);
    std::vector<float> got(total), want(total);
    const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {head_dim, n_heads, n_tokens});
    const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {head_dim, n_heads, n_tokens});
    const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {head_dim, n_heads, n_tokens});

    struct Variant {
        const char* name;
        RopeParams p;
    };
    std::vector<Variant> variants;
    RopeParams base;
    base.n_dims = 64;
    variants.push_back({"normal", base});
    RopeParams neox = base;
    neox.order = RopeOrder::NeoX;
    variants.push_back({"neox", neox});
    RopeParams partial = neox;
    partial.n_dims = 32;  // only the first half rotates, the rest is copied
    variants.push_back({"neox partial", partial});
    RopeParams partial_normal = base;
    partial_normal.n_dims = 16;
    partial_normal.freq_base = 500000.0f;
    variants.push_back({"normal partial", partial_normal});
    RopeParams ff = base;
    ff.freq_factors = factors.data();
    variants.push_back({"freq factors", ff});
    RopeParams yarn = neox;
    yarn.freq_scale = 0.25f;
    yarn.ext_factor = 1.0f;
    yarn.n_ctx_orig = 4096;
    yarn.attn_factor = 1.0f;
    variants.push_back({"yarn", yarn});
    RopeParams linear = base;
    linear.freq_scale = 0.5f;
    linear.attn_factor = 0.8f;
    variants.push_back({"linear scaling", linear});
    RopeParams mrope = base;
    mrope.order = RopeOrder::MRope;
    mrope.sections[0] = 16;
    mrope.sections[1] = 8;
    mrope.sections[2] = 8;
    variants.push_back({"mrope", mrope});
    RopeParams mrope4 = mrope;
    mrope4.sections[0] = 10;
    mrope4.sections[3] = 6;
    variants.push_back({"mrope with extra section", mrope4});

    for (const Variant& v : variants) {
        SCOPED_TRACE(v.name);
        ops_->rope(vx, pos.data(), v.p, vg);
        ref_.rope(vx, pos.data(), v.p, vw);
        EXPECT_TRUE(all_close(got, want, 1e-4, 1e-4));
        // In place gives the same result.
        auto y = x;
        const auto vy = TensorView::contiguous(ElementType::F32, y.data(), {head_dim, n_heads, n_tokens});
        ops_->rope(vy, pos.data(), v.p, vy);
        EXPECT_TRUE(all_close(y, got, 0, 0));
    }
}

TEST_P(RopeSoftmaxTest, RopeKeepsNormsAndRejectsBadParams) {
    // A pure rotation (attn_factor 1, no YaRN) preserves each pair's length.
    const auto x = random_floats(128, 23);
    std::vector<float> y(128);
    const int32_t pos = 12345;
    RopeParams p;
    p.n_dims = 128;
    ops_->rope(TensorView::contiguous(ElementType::F32, x.data(), {128}), &pos, p,
               TensorView::contiguous(ElementType::F32, y.data(), {128}));
    for (size_t i = 0; i < 128; i += 2) {
        EXPECT_NEAR(std::hypot(y[i], y[i + 1]), std::hypot(x[i], x[i + 1]), 1e-5);
    }
    EXPECT_NEAR(y[0], x[0] * std::cos(12345.0) - x[1] * std::sin(12345.0), 1e-3);
    p.n_dims = 7;
    EXPECT_THROW(ops_->rope(TensorView::contiguous(ElementType::F32, x.data(), {128}), &pos, p,
                            TensorView::contiguous(ElementType::F32, y.data(), {128})),
                 Error);
}

TEST(Llama3FrequencyFactors, MatchesTheReferenceRule) {
    // Llama 3.1 8B: factor 8, low 1, high 4, original context 8192, base 500000.
    const auto f = llama3_frequency_factors(128, 500000.0f, 8.0f, 1.0f, 4.0f, 8192);
    ASSERT_EQ(f.size(), 64u);
    EXPECT_FLOAT_EQ(f[0], 1.0f);    // highest frequency: unchanged
    EXPECT_FLOAT_EQ(f[63], 8.0f);   // lowest: fully scaled
    for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);  // monotone in between
    const bool has_smooth = std::any_of(f.begin(), f.end(), [](float v) { return v > 1.0f && v < 8.0f; });
    EXPECT_TRUE(has_smooth);
}

TEST_P(RopeSoftmaxTest, SoftmaxVariants) {
    for (int64_t n : test::awkward_sizes()) {
        SCOPED_TRACE(n);
        const int64_t rows = 3, heads = 5;
        const size_t total = static_cast<size_t>(n * rows * heads);
        const auto x = random_floats(total, 30, -10.0f, 10.0f);
        // Mask: random biases with some -inf entries, one row per i1.
        auto mask = random_floats(static_cast<size_t>(n * rows), 31, -3.0f, 1.0f);
        for (size_t i = 0; i < mask.size(); i += 3) mask[i] = -INFINITY;
        std::vector<uint16_t> mask_h(mask.size());
        for (size_t i = 0; i < mask.size(); ++i) mask_h[i] = f32_to_f16(mask[i]);
        const auto sinks = random_floats(static_cast<size_t>(heads), 32, -2.0f, 4.0f);
        const auto vmask = TensorView::contiguous(ElementType::F32, mask.data(), {n, rows});
        const auto vmask_h = TensorView::contiguous(ElementType::F16, mask_h.data(), {n, rows});
        std::vector<float> got(total), want(total);
        const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n, rows, heads});
        const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {n, rows, heads});
        const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {n, rows, heads});

        std::vector<std::pair<const char*, SoftmaxParams>> variants;
        variants.push_back({"plain", SoftmaxParams{}});
        variants.push_back({"scaled", SoftmaxParams{0.125f, 0.0f, nullptr, 0.0f, nullptr}});
        variants.push_back({"mask", SoftmaxParams{0.5f, 0.0f, &vmask, 0.0f, nullptr}});
        variants.push_back({"f16 mask", SoftmaxParams{0.5f, 0.0f, &vmask_h, 0.0f, nullptr}});
        variants.push_back({"alibi", SoftmaxParams{1.0f, 0.0f, &vmask, 8.0f, nullptr}});
        variants.push_back({"softcap", SoftmaxParams{1.0f, 5.0f, &vmask, 0.0f, nullptr}});
        variants.push_back({"sinks", SoftmaxParams{1.0f, 0.0f, &vmask, 0.0f, sinks.data()}});
        for (auto& [name, p] : variants) {
            SCOPED_TRACE(name);
            ops_->softmax(vx, p, vg);
            ref_.softmax(vx, p, vw);
            EXPECT_TRUE(all_close(got, want, 1e-7, 1e-5));
            if (p.sinks == nullptr) {
                // Rows sum to 1 unless fully masked (then 0).
                for (int64_t r = 0; r < rows * heads; ++r) {
                    const float s = std::accumulate(got.begin() + r * n, got.begin() + (r + 1) * n, 0.0f);
                    EXPECT_TRUE(std::fabs(s - 1.0f) < 1e-5f || s == 0.0f) << s;
                }
            }
        }
    }
}

TEST_P(RopeSoftmaxTest, SoftmaxFullyMaskedRowIsZero) {
    std::vector<float> x{1, 2, 3}, mask(3, -INFINITY), y(3, 7.0f);
    const auto vmask = TensorView::contiguous(ElementType::F32, mask.data(), {3});
    SoftmaxParams p;
    p.mask = &vmask;
    ops_->softmax(TensorView::contiguous(ElementType::F32, x.data(), {3}), p, TensorView::contiguous(ElementType::F32, y.data(), {3}));
    EXPECT_EQ(y, std::vector<float>(3, 0.0f));
}

CRIA_OPS_INSTANTIATE(RopeSoftmaxTest);

}  // namespace
}  // namespace cria::ops
