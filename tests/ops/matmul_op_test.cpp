// The op API's matmul is wired to cria_matmul: shapes, strides and row order
// must come out right. Compared with ReferenceOps::matmul (dequantised weights
// times f32 activations in double). Bounds, relative to sum |w| |x| of each
// output: 1e-5 for f32/f16/bf16 weights (f32 activations), 1e-2 for quantised
// weights (the kernels quantise activations to 8 bits, ~0.4% per value).

#include <algorithm>
#include <cmath>
#include <cstring>
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

// matmul_swiglu computes the activation row by row inside the product: the
// very bits of swiglu into a buffer and matmul of that buffer, for one vector
// (decode), a few, and a prefill batch of two column groups (70), with gate
// and up dense or the two halves of one joined [2k, n] output; and close to
// the float64 reference.
TEST_P(MatmulOpTest, SwigluFusedIntoTheProductGivesTheSameBits) {
    for (const ElementType type : {ElementType::Q4_0, ElementType::Q8_0, ElementType::F32}) {
        const int64_t k = 512, rows = 37;
        const auto wf = random_floats(static_cast<size_t>(rows * k), 80);
        std::vector<uint8_t> w(*row_size_bytes(type, static_cast<uint64_t>(k)) * static_cast<size_t>(rows));
        quant::quantize_rows(type, wf.data(), w.data(), rows, k);
        const auto vw = TensorView::contiguous(type, w.data(), {k, rows});
        for (const int64_t n : {1, 5, 70}) {
            for (const bool joined : {false, true}) {
                SCOPED_TRACE(::testing::Message() << element_type_name(type) << " n=" << n << " joined=" << joined);
                const auto both = random_floats(static_cast<size_t>(2 * k * n), 81);
                TensorView gate = TensorView::contiguous(ElementType::F32, both.data(), {k, n});
                TensorView up = TensorView::contiguous(ElementType::F32, both.data() + k * n, {k, n});
                if (joined) {
                    up.data = const_cast<float*>(both.data()) + k;
                    gate.nb[1] = up.nb[1] = 2 * k * sizeof(float);
                    gate.nb[2] = gate.nb[3] = up.nb[2] = up.nb[3] = gate.nb[1] * static_cast<size_t>(n);
                }
                std::vector<float> act(static_cast<size_t>(k * n));
                std::vector<float> want(static_cast<size_t>(rows * n), NAN), got(want.size(), NAN), ref(want.size());
                const auto vact = TensorView::contiguous(ElementType::F32, act.data(), {k, n});
                ops_->swiglu(gate, up, vact);
                ops_->matmul(vw, vact, TensorView::contiguous(ElementType::F32, want.data(), {rows, n}));
                ops_->matmul_swiglu(vw, gate, up, TensorView::contiguous(ElementType::F32, got.data(), {rows, n}));
                ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
                ref_.matmul_swiglu(vw, gate, up, TensorView::contiguous(ElementType::F32, ref.data(), {rows, n}));
                double scale = 0;
                for (float v : ref) scale = std::max(scale, static_cast<double>(std::fabs(v)));
                for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 2e-2 * scale) << i;
            }
        }
    }
}

TEST_P(MatmulOpTest, SwigluFusedRejectsUnequalStrides) {
    std::vector<float> w(8 * 3), g(8 * 2), u(16 * 2), y(3 * 2);
    const auto up = [&] {
        TensorView v = TensorView::contiguous(ElementType::F32, u.data(), {8, 2});
        v.nb[1] = 16 * sizeof(float);
        return v;
    }();
    EXPECT_THROW(ops_->matmul_swiglu(TensorView::contiguous(ElementType::F32, w.data(), {8, 3}),
                                     TensorView::contiguous(ElementType::F32, g.data(), {8, 2}), up,
                                     TensorView::contiguous(ElementType::F32, y.data(), {3, 2})),
                 Error);
}

CRIA_OPS_INSTANTIATE(MatmulOpTest);

}  // namespace
}  // namespace cria::ops
