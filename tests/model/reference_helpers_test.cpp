// The double-precision helpers of the reference forward (model/reference/):
// the order of a linear layer's optional parts and the attention window.

#include "model/reference/helpers.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cria::model::reference
