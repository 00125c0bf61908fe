// The mixture-of-experts ops of CpuOps against ReferenceOps (double): top-k
// routing with every gating variant, weight normalisation and scaling, a
// selection bias and ties; the indexed expert product (mul_mat_id) on
// awkward sizes for plain and quantised weight types, with one input per
// token (gate/up) or one per slot (down).

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cria/quant/quantize.h"
#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::random_floats;
using MoeOpsTest = test::OpsFixture;

TEST_P(MoeOpsTest, RoutingMatchesReference) {
    const int64_t n_expert = 13, n_tokens = 7;
    const auto logits = random_floats(static_cast<size_t>(n_expert * n_tokens), 80);
    const auto bias = random_floats(static_cast<size_t>(n_expert), 81);
    const auto lv = TensorView::contiguous(ElementType::F32, logits.data(), {n_expert, n_tokens});
    for (MoeGating gating : {MoeGating::Softmax, MoeGating::Sigmoid, MoeGating::SoftmaxWeight})
        for (int64_t k : {1, 4, 13})
            for (bool norm : {false, true})
                for (float scale : {0.0f, 2.5f})
                    for (bool with_bias : {false, true}) {
                        SCOPED_TRACE(::testing::Message() << "gating " << static_cast<int>(gating) << " k " << k
                                                          << " norm " << norm << " scale " << scale << " bias "
                                                          << with_bias);
                        MoeRouteParams p;
                        p.n_used = k;
                        p.gating = gating;
                        p.norm_weights = norm;
                        p.weights_scale = scale;
                        p.selection_bias = with_bias ? bias.data() : nullptr;
                        std::vector<int32_t> ids(static_cast<size_t>(k * n_tokens), -1), ref_ids(ids.size(), -2);
                        std::vector<float> w(ids.size(), NAN), ref_w(ids.size(), NAN);
                        ops_->moe_route(lv, p, ids.data(), TensorView::contiguous(ElementType::F32, w.data(), {k, n_tokens}));
                        ref_.moe_route(lv, p, ref_ids.data(),
                                       TensorView::contiguous(ElementType::F32, ref_w.data(), {k, n_tokens}));
                        EXPECT_EQ(ids, ref_ids);
                        for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref_w[i], 1e-5) << i;
                        // Descending selection scores, and what each variant promises.
                        for (int64_t t = 0; t < n_tokens; ++t) {
                            double sum = 0;
                            for (int64_t j = 0; j < k; ++j) sum += w[static_cast<size_t>(t * k + j)];
                            if (norm || gating == MoeGating::SoftmaxWeight) {
                                EXPECT_NEAR(sum, scale == 0.0f ? 1.0 : scale, 1e-5);
                            }
                            if (!with_bias) {
                                for (int64_t j = 1; j < k; ++j) {
                                    EXPECT_GE(logits[static_cast<size_t>(t * n_expert + ids[static_cast<size_t>(t * k + j - 1)])],
                                              logits[static_cast<size_t>(t * n_expert + ids[static_cast<size_t>(t * k + j)])]);
                                }
                            }
                        }
                    }
}

TEST_P(MoeOpsTest, RoutingTiesGoToTheLowerExpert) {
    const std::vector<float> logits{0.5f, 1.0f, 0.5f, 1.0f, 0.5f};
    MoeRouteParams p;
    p.n_used = 3;
    std::vector<int32_t> ids(3);
    std::vector<float> w(3);
    ops_->moe_route(TensorView::contiguous(ElementType::F32, logits.data(), {5, 1}), p, ids.data(),
                    TensorView::contiguous(ElementType::F32, w.data(), {3, 1}));
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 0}));
    EXPECT_FLOAT_EQ(w[0], w[1]);
}

TEST_P(MoeOpsTest, RoutingKeepsTheBestExpertGroups) {
    // Groups {0,1} {2,3} {4,5} {6,7}; with raw scores (SoftmaxWeight) the
    // group scores (sum of the two best) are 0.9, 1.0, 1.1, 0.3: groups 2
    // and 1 are kept, so expert 0, the best alone, is not selected.
    const std::vector<float> logits{0.9f, 0.0f, 0.5f, 0.5f, 0.8f, 0.3f, 0.1f, 0.2f};
    MoeRouteParams p;
    p.n_used = 3;
    p.gating = MoeGating::SoftmaxWeight;
    p.group_count = 4;
    p.group_used = 2;
    std::vector<int32_t> ids(3);
    std::vector<float> w(3);
    const auto lv = TensorView::contiguous(ElementType::F32, logits.data(), {8, 1});
    ops_->moe_route(lv, p, ids.data(), TensorView::contiguous(ElementType::F32, w.data(), {3, 1}));
    EXPECT_EQ(ids, (std::vector<int32_t>{4, 2, 3}));
    const double z = std::exp(0.8) + 2 * std::exp(0.5);
    EXPECT_NEAR(w[0], std::exp(0.8) / z, 1e-6);
    EXPECT_NEAR(w[1], std::exp(0.5) / z, 1e-6);
    // One group kept: only its experts, even when k asks for more (the rest at -inf).
    p.group_used = 1;
    p.n_used = 2;
    ops_->moe_route(lv, p, ids.data(), TensorView::contiguous(ElementType::F32, w.data(), {2, 1}));
    EXPECT_EQ((std::vector<int32_t>{ids[0], ids[1]}), (std::vector<int32_t>{4, 5}));
}

TEST_P(MoeOpsTest, GroupedRoutingPicksOnlyFromTheKeptGroups) {
    // Random scores with a selection bias, every gating: each selected expert
    // lies in one of the group_used groups with the best top-two sums
    // (computed here independently), and CpuOps agrees with ReferenceOps.
    const int64_t n_expert = 24, n_tokens = 9, groups = 6, per = n_expert / groups;
    const auto logits = random_floats(static_cast<size_t>(n_expert * n_tokens), 82);
    const auto bias = random_floats(static_cast<size_t>(n_expert), 83);
    const auto lv = TensorView::contiguous(ElementType::F32, logits.data(), {n_expert, n_tokens});
    for (MoeGating gating : {MoeGating::Softmax, MoeGating::Sigmoid})
        for (uint32_t used : {1u, 2u, 5u}) {
            MoeRouteParams p;
            p.n_used = 4;
            p.gating = gating;
            p.selection_bias = bias.data();
            p.group_count = groups;
            p.group_used = used;
            std::vector<int32_t> ids(static_cast<size_t>(4 * n_tokens)), ref_ids(ids.size());
            std::vector<float> w(ids.size()), ref_w(ids.size());
            ops_->moe_route(lv, p, ids.data(), TensorView::contiguous(ElementType::F32, w.data(), {4, n_tokens}));
            ref_.moe_route(lv, p, ref_ids.data(), TensorView::contiguous(ElementType::F32, ref_w.data(), {4, n_tokens}));
            EXPECT_EQ(ids, ref_ids);
            for (int64_t t = 0; t < n_tokens; ++t) {
                std::vector<double> sel(static_cast<size_t>(n_expert)), group_score(groups);
                double max = -1e30, sum = 0;
                for (int64_t e = 0; e < n_expert; ++e) max = std::max<double>(max, logits[static_cast<size_t>(t * n_expert + e)]);
                for (int64_t e = 0; e < n_expert; ++e) sum += std::exp(logits[static_cast<size_t>(t * n_expert + e)] - max);
                for (int64_t e = 0; e < n_expert; ++e) {
                    const double l = logits[static_cast<size_t>(t * n_expert + e)];
                    const double pi = gating == MoeGating::Softmax ? std::exp(l - max) / sum : 1 / (1 + std::exp(-l));
                    sel[static_cast<size_t>(e)] = pi + bias[static_cast<size_t>(e)];
                }
                for (int64_t g = 0; g < groups; ++g) {
                    std::vector<double> v(sel.begin() + g * per, sel.begin() + (g + 1) * per);
                    std::sort(v.rbegin(), v.rend());
                    group_score[static_cast<size_t>(g)] = v[0] + v[1];
                }
                for (int64_t j = 0; j < 4; ++j) {
                    const int64_t g = ids[static_cast<size_t>(t * 4 + j)] / per;
                    int64_t better = 0;  // groups strictly better than the selected expert's group
                    for (int64_t o = 0; o < groups; ++o) better += group_score[static_cast<size_t>(o)] > group_score[static_cast<size_t>(g)];
                    EXPECT_LT(better, static_cast<int64_t>(used)) << "token " << t << " rank " << j;  // k <= used * per
                }
            }
        }
}

TEST_P(MoeOpsTest, RoutingRefusesBadGroupsAndBadK) {
    std::vector<float> logits(8), w(2);
    std::vector<int32_t> ids(2);
    MoeRouteParams p;
    p.n_used = 2;
    p.group_count = 3;  // does not divide 8
    p.group_used = 1;
    const auto lv = TensorView::contiguous(ElementType::F32, logits.data(), {8, 1});
    const auto wv = TensorView::contiguous(ElementType::F32, w.data(), {2, 1});
    EXPECT_THROW(ops_->moe_route(lv, p, ids.data(), wv), Error);
    p.group_count = 8;  // groups of one expert: no top two
    EXPECT_THROW(ops_->moe_route(lv, p, ids.data(), wv), Error);
    p.group_count = 4;
    p.group_used = 0;
    EXPECT_THROW(ops_->moe_route(lv, p, ids.data(), wv), Error);
    p.group_used = 5;
    EXPECT_THROW(ops_->moe_route(lv, p, ids.data(), wv), Error);
    p.group_count = 0;
    p.n_used = 9;
    EXPECT_THROW(ops_->moe_route(lv, p, ids.data(), wv), Error);
}

TEST_P(MoeOpsTest, IndexedProductMatchesReference) {
    // MXFP4: how gpt-oss files store their experts.
    const std::vector<ElementType> types{ElementType::F32, ElementType::F16, ElementType::Q8_0, ElementType::Q4_0,
                                         ElementType::Q4_K, ElementType::MXFP4};
    const int64_t rows = 37, n_expert = 5, n_used = 3;
    std::mt19937 rng(7);
    for (ElementType type : types) {
        const bool plain = element_type_info(type)->block_size == 1;
        const int64_t k = plain ? 33 : 256;
        const auto wf = random_floats(static_cast<size_t>(rows * k * n_expert), 90);
        const size_t row_bytes = *row_size_bytes(type, static_cast<uint64_t>(k));
        std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows * n_expert));
        quant::quantize_rows(type, wf.data(), w.data(), rows * n_expert, k);
        const auto vw = TensorView::contiguous(type, w.data(), {k, rows, n_expert});
        for (int64_t n_tokens : {1, 6})
            for (int64_t n_x : {int64_t{1}, n_used}) {
                SCOPED_TRACE(::testing::Message() << element_type_name(type) << " tokens " << n_tokens << " n_x " << n_x);
                std::vector<int32_t> ids(static_cast<size_t>(n_used * n_tokens));
                for (auto& id : ids) id = static_cast<int32_t>(rng() % n_expert);  // repeats allowed
                const auto x = random_floats(static_cast<size_t>(k * n_x * n_tokens), 91);
                const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {k, n_x, n_tokens});
                std::vector<float> got(static_cast<size_t>(rows * n_used * n_tokens), NAN), want(got.size());
                ops_->matmul_id(vw, vx, ids.data(), n_used,
                                TensorView::contiguous(ElementType::F32, got.data(), {rows, n_used, n_tokens}));
                ref_.matmul_id(vw, vx, ids.data(), n_used,
                               TensorView::contiguous(ElementType::F32, want.data(), {rows, n_used, n_tokens}));
                for (size_t i = 0; i < got.size(); ++i) {
                    ASSERT_TRUE(std::isfinite(got[i])) << i;
                    // Relative to the size of the dot products (~sqrt(k) for unit inputs).
                    ASSERT_NEAR(got[i], want[i], (plain ? 1e-5 : 2e-2) * std::sqrt(static_cast<double>(k))) << i;
                }
            }
    }
}

TEST_P(MoeOpsTest, IndexedProductRefusesBadIds) {
    std::vector<float> w(4 * 3 * 2), x(4), y(3);
    const int32_t ids[1] = {2};
    EXPECT_THROW(ops_->matmul_id(TensorView::contiguous(ElementType::F32, w.data(), {4, 3, 2}),
                                 TensorView::contiguous(ElementType::F32, x.data(), {4, 1, 1}), ids, 1,
                                 TensorView::contiguous(ElementType::F32, y.data(), {3, 1, 1})),
                 Error);
}

CRIA_OPS_INSTANTIATE(MoeOpsTest);

}  // namespace
}  // namespace cria::ops
