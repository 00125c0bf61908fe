// The mixture-of-experts ops of CpuOps against ReferenceOps (double): top-k
// routing with every gating variant, weight normalisation and scaling, a
// selection bias and ties; the indexed expert product (mul_mat_id) on
// awkward sizes for plain and quantised weight types, with one input per
// token (gate/up) or one per slot (down).

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

TEST_P(MoeOpsTest, RoutingRefusesExpertGroupsAndBadK) {
    std::vector<float> logits(8), w(2);
    std::vector<int32_t> ids(2);
    MoeRouteParams p;
    p.n_used = 2;
    p.group_count = 4;
    const auto lv = TensorView::contiguous(ElementType::F32, logits.data(), {8, 1});
    const auto wv = TensorView::contiguous(ElementType::F32, w.data(), {2, 1});
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
