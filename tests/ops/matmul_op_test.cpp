// The op API's matmul is wired to cria_matmul: shapes, strides and row order
// must come out right. Compared with ReferenceOps::matmul (dequantised weights
// times f32 activations in double). Bounds, relative to sum |w| |x| of each
// output: 1e-5 for f32/f16/bf16 weights (f32 activations), 1e-2 for quantised
// weights (the kernels quantise activations to 8 bits, ~0.4% per value).

#include <cmath>
#include <vector>

#include "cria/quant/quantize.h"
#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::random_floats;
using MatmulOpTest = test::OpsFixture;

TEST_P(MatmulOpTest, MatchesReference) {
    const std::vector<ElementType> types{ElementType::F32, ElementType::F16, ElementType::BF16, ElementType::Q8_0,
                                         ElementType::Q4_0, ElementType::Q4_K, ElementType::Q6_K};
    for (ElementType type : types) {
        const bool plain = element_type_info(type)->block_size == 1;
        const int64_t k = plain ? 33 : 512;
        for (int64_t n : {1, 5}) {
            SCOPED_TRACE(::testing::Message() << element_type_name(type) << " n=" << n);
            const int64_t rows = 37;
            const auto wf = random_floats(static_cast<size_t>(rows * k), 70);
            std::vector<uint8_t> w(*row_size_bytes(type, static_cast<uint64_t>(k)) * static_cast<size_t>(rows));
            quant::quantize_rows(type, wf.data(), w.data(), rows, k);
            const auto x = random_floats(static_cast<size_t>(k * n), 71);
            std::vector<float> got(static_cast<size_t>(rows * n), NAN), want(got.size());
            const auto vw = TensorView::contiguous(type, w.data(), {k, rows});
            const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {k, n});
            ops_->matmul(vw, vx, TensorView::contiguous(ElementType::F32, got.data(), {rows, n}));
            ref_.matmul(vw, vx, TensorView::contiguous(ElementType::F32, want.data(), {rows, n}));
            std::vector<float> wrow(static_cast<size_t>(k));
            for (int64_t j = 0; j < n; ++j) {
                for (int64_t r = 0; r < rows; ++r) {
                    quant::dequantize_row(type, w.data() + vw.nb[1] * static_cast<size_t>(r), wrow.data(), k);
                    double mag = 0;
                    for (int64_t i = 0; i < k; ++i) mag += std::fabs(wrow[static_cast<size_t>(i)] * x[static_cast<size_t>(j * k + i)]);
                    const float g = got[static_cast<size_t>(j * rows + r)];
                    ASSERT_TRUE(std::isfinite(g));
                    ASSERT_NEAR(g, want[static_cast<size_t>(j * rows + r)], (plain ? 1e-5 : 1e-2) * mag) << "row " << r;
                }
            }
        }
    }
}

TEST_P(MatmulOpTest, RejectsMismatchedShapes) {
    std::vector<float> w(4 * 3), x(5), y(3);
    EXPECT_THROW(ops_->matmul(TensorView::contiguous(ElementType::F32, w.data(), {4, 3}),
                              TensorView::contiguous(ElementType::F32, x.data(), {5, 1}),
                              TensorView::contiguous(ElementType::F32, y.data(), {3, 1})),
                 Error);
}

CRIA_OPS_INSTANTIATE(MatmulOpTest);

}  // namespace
}  // namespace cria::ops
