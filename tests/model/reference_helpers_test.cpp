// The double-precision helpers of the reference forward (model/reference/):
// the order of a linear layer's optional parts, the attention window and
// sinks, and rope with YaRN against the ops module's own reference.

#include "model/reference/helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ops/reference_ops.h"

namespace cria::model::reference {
namespace {

// W = [[1, 2], [3, 4]], bias [10, 20], scale 2.
struct TwoByTwo {
    float w[4] = {1, 2, 3, 4};
    model::Linear lin;
    TwoByTwo() {
        lin.w = ops::TensorView::contiguous(ElementType::F32, w, {2, 2});
        lin.bias = {10, 20};
        lin.scale = 2.0f;
        lin.has_scale = true;
    }
};

TEST(ReferenceHelpers, LinearAppliesScaleAndBiasInTheTablesOrder) {
    TwoByTwo m;
    const Vec x{1, 1};  // W x = [3, 7]
    m.lin.bias_before_scale = false;  // attention projections: scale * (W x) + bias
    EXPECT_EQ(Linear(m.lin)(x), (Vec{16, 34}));
    m.lin.bias_before_scale = true;  // feed-forward (ScaleUse::AfterBias): scale * (W x + bias)
    EXPECT_EQ(Linear(m.lin)(x), (Vec{26, 54}));
    m.lin.has_scale = false;  // ScaleUse::Ignored: the scale is never loaded
    EXPECT_EQ(Linear(m.lin)(x), (Vec{13, 27}));
}

TEST(ReferenceHelpers, SlidingWindowSeesOnlyTheLastKeys) {
    HParams hp;
    hp.n_head = hp.n_head_kv = 1;
    hp.head_dim = hp.head_dim_v = 1;
    hp.attention_scale = 0.0f;  // equal scores: the output is the mean of the visible values
    hp.n_swa = 2;
    hp.swa_layers = {true, false};
    const Rows q{{1}, {1}, {1}}, k = q, v{{3}, {6}, {9}};
    EXPECT_EQ(attention(hp, 0, q, k, v), (Rows{{3}, {4.5}, {7.5}}));
    EXPECT_EQ(attention(hp, 1, q, k, v), (Rows{{3}, {4.5}, {6}}));
}

// A sink is one more logit in the denominator with no value: with all scores
// 0 and a sink of ln 2, position t's weights are 1 / (t + 1 + 2) each.
TEST(ReferenceHelpers, SinksJoinTheDenominatorOnly) {
    HParams hp;
    hp.n_head = hp.n_head_kv = 1;
    hp.head_dim = hp.head_dim_v = 1;
    hp.attention_scale = 0.0f;
    hp.swa_layers = {false};
    const std::vector<float> sinks{static_cast<float>(std::log(2.0))};
    const Rows q{{1}, {1}}, k = q, v{{3}, {6}};
    const Rows out = attention(hp, 0, q, k, v, &sinks);
    EXPECT_NEAR(out[0][0], 3.0 / 3.0, 1e-7);  // sink weight ln2 rounded to float
    EXPECT_NEAR(out[1][0], (3.0 + 6.0) / 4.0, 1e-7);
}

// The reference's rope (double, written from ggml's rope_yarn) against the
// ops module's reference rope, which the SIMD kernel is tested against: YaRN
// with a ramp inside the head (pairs 2..6 of 8 for n_ctx_orig 4096), both
// orders, a position far past the window where the mix matters.
TEST(ReferenceHelpers, RopeWithYarnMatchesTheOpsReference) {
    const uint32_t head_dim = 16, n_heads = 3;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(head_dim * n_heads);
    for (float& v : x) v = u(rng);
    for (bool neox : {false, true}) {
        for (float ext : {0.0f, 1.0f}) {
            Rope r;
            r.n_rot = head_dim;
            r.neox = neox;
            r.freq_base = 150000.0;
            r.freq_scale = 1.0 / 32.0;
            r.attn_factor = 0.75;
            r.ext_factor = ext;
            r.n_ctx_orig = 4096;
            Vec got(x.begin(), x.end());
            const int32_t pos = 1234;
            rope(got, head_dim, pos, r);

            ops::RopeParams p;
            p.n_dims = static_cast<int>(head_dim);
            p.order = neox ? ops::RopeOrder::NeoX : ops::RopeOrder::Normal;
            p.freq_base = 150000.0f;
            p.freq_scale = 1.0f / 32.0f;
            p.attn_factor = 0.75f;
            p.ext_factor = ext;
            p.n_ctx_orig = 4096;
            std::vector<float> want(x.size());
            ops::ReferenceOps ref;
            ref.rope(ops::TensorView::contiguous(ElementType::F32, x.data(), {head_dim, n_heads, 1}), &pos, p,
                     ops::TensorView::contiguous(ElementType::F32, want.data(), {head_dim, n_heads, 1}));
            for (size_t i = 0; i < x.size(); ++i)
                EXPECT_NEAR(got[i], want[i], 2e-5) << "neox " << neox << " ext " << ext << " element " << i;
        }
    }
}

}  // namespace
}  // namespace cria::model::reference
