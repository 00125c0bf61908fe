// Element-wise ops, activations and norms of CpuOps (every ISA level, 1 and 3
// threads) against ReferenceOps (double).
// Error bounds: add/mul/scale are one float rounding (rel 1e-7 vs the double
// result rounded once); SiLU/SwiGLU use the ~2 ulp vector exp (rel 3e-6);
// GELU uses float tanh/erf (rel 1e-5, abs 1e-7 near zero); GELU-erf over
// -30..30 is a few ulp (vec_test.cpp), checked here at rel 1e-6 with abs 1e-7
// because the reference's 1 + erf cancels in double for x < -7; norms
// accumulate n squares in float (rel 1e-5).

#include <memory>
#include <vector>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "ops/reference_ops.h"
#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::all_close;
using test::random_floats;
using OpsTest = test::OpsFixture;

// Shapes: {ne0, rows}.
const std::vector<std::pair<int64_t, int64_t>> kShapes{{1, 1}, {7, 3}, {31, 2}, {33, 5}, {255, 1}, {257, 4}, {4097, 2}};

TEST_P(OpsTest, Unary) {
    for (auto [n, rows] : kShapes) {
        SCOPED_TRACE(::testing::Message() << n << "x" << rows);
        const size_t total = static_cast<size_t>(n * rows);
        auto x = random_floats(total, 10, -6.0f, 6.0f);
        std::vector<float> got(total), want(total);
        const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n, rows});
        const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {n, rows});
        const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {n, rows});

        ops_->silu(vx, vg);
        ref_.silu(vx, vw);
        EXPECT_TRUE(all_close(got, want, 1e-7, 3e-6)) << "silu";
        ops_->gelu(vx, vg);
        ref_.gelu(vx, vw);
        EXPECT_TRUE(all_close(got, want, 1e-7, 1e-5)) << "gelu";
        ops_->gelu_erf(vx, vg);
        ref_.gelu_erf(vx, vw);
        EXPECT_TRUE(all_close(got, want, 1e-7, 1e-5)) << "gelu_erf";
        ops_->scale(vx, -0.3f, vg);
        ref_.scale(vx, -0.3f, vw);
        EXPECT_TRUE(all_close(got, want, 0, 1e-7)) << "scale";
        // In place.
        auto y = x;
        const auto vy = TensorView::contiguous(ElementType::F32, y.data(), {n, rows});
        ops_->silu(vy, vy);
        ref_.silu(vx, vw);
        EXPECT_TRUE(all_close(y, want, 1e-7, 3e-6)) << "silu in place";
    }
}

TEST_P(OpsTest, GeluErfOverWideRange) {
    for (auto [n, rows] : kShapes) {
        SCOPED_TRACE(::testing::Message() << n << "x" << rows);
        const size_t total = static_cast<size_t>(n * rows);
        auto x = random_floats(total, 14, -30.0f, 30.0f);
        std::vector<float> got(total), want(total);
        const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n, rows});
        const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {n, rows});
        const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {n, rows});
        ops_->gelu_erf(vx, vg);
        ref_.gelu_erf(vx, vw);
        EXPECT_TRUE(all_close(got, want, 1e-7, 1e-6));
    }
}

TEST_P(OpsTest, BinaryAndGlu) {
    for (auto [n, rows] : kShapes) {
        SCOPED_TRACE(::testing::Message() << n << "x" << rows);
        const size_t total = static_cast<size_t>(n * rows);
        auto a = random_floats(total, 11, -6.0f, 6.0f);
        auto b = random_floats(total, 12);
        auto b_row = random_floats(static_cast<size_t>(n), 13);
        std::vector<float> got(total), want(total);
        const auto va = TensorView::contiguous(ElementType::F32, a.data(), {n, rows});
        const auto vb = TensorView::contiguous(ElementType::F32, b.data(), {n, rows});
        const auto vrow = TensorView::contiguous(ElementType::F32, b_row.data(), {n});
        const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {n, rows});
        const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {n, rows});

        ops_->add(va, vb, vg);
        ref_.add(va, vb, vw);
        EXPECT_TRUE(all_close(got, want, 0, 1e-7)) << "add";
        ops_->add(va, vrow, vg);
        ref_.add(va, vrow, vw);
        EXPECT_TRUE(all_close(got, want, 0, 1e-7)) << "add broadcast";
        ops_->mul(va, vb, vg);
        ref_.mul(va, vb, vw);
        EXPECT_TRUE(all_close(got, want, 0, 1e-7)) << "mul";
        ops_->mul(va, vrow, vg);
        ref_.mul(va, vrow, vw);
        EXPECT_TRUE(all_close(got, want, 0, 1e-7)) << "mul broadcast";
        ops_->swiglu(va, vb, vg);
        ref_.swiglu(va, vb, vw);
        EXPECT_TRUE(all_close(got, want, 1e-7, 3e-6)) << "swiglu";
        ops_->geglu(va, vb, vg);
        ref_.geglu(va, vb, vw);
        EXPECT_TRUE(all_close(got, want, 1e-7, 1e-5)) << "geglu";
        // Scaled inputs so that both clamps (limit 7 on the gate from above,
        // on up from both sides) bite on some elements and not on others.
        std::vector<float> g12(a), u12(b);
        for (float& v : g12) v *= 12.0f;
        for (float& v : u12) v *= 12.0f;
        const auto vg12 = TensorView::contiguous(ElementType::F32, g12.data(), {n, rows});
        const auto vu12 = TensorView::contiguous(ElementType::F32, u12.data(), {n, rows});
        ops_->swiglu_oai(vg12, vu12, 1.702f, 7.0f, vg);
        ref_.swiglu_oai(vg12, vu12, 1.702f, 7.0f, vw);
        EXPECT_TRUE(all_close(got, want, 1e-6, 3e-6)) << "swiglu_oai";
    }
}

TEST_P(OpsTest, Norms) {
    for (auto [n, rows] : kShapes) {
        SCOPED_TRACE(::testing::Message() << n << "x" << rows);
        const size_t total = static_cast<size_t>(n * rows);
        // An offset mean makes LayerNorm's cancellation matter.
        auto x = random_floats(total, 14, 3.0f, 7.0f);
        auto w = random_floats(static_cast<size_t>(n), 15);
        auto bias = random_floats(static_cast<size_t>(n), 16);
        std::vector<float> got(total), want(total);
        const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n, rows});
        const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {n, rows});
        const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {n, rows});
        for (const float* weight : {static_cast<const float*>(nullptr), static_cast<const float*>(w.data())}) {
            ops_->rms_norm(vx, weight, 1e-6f, vg);
            ref_.rms_norm(vx, weight, 1e-6f, vw);
            EXPECT_TRUE(all_close(got, want, 1e-6, 1e-5)) << "rms_norm";
            ops_->layer_norm(vx, weight, weight ? bias.data() : nullptr, 1e-5f, vg);
            ref_.layer_norm(vx, weight, weight ? bias.data() : nullptr, 1e-5f, vw);
            // n == 1 normalises to 0 (+ bias): absolute bound.
            EXPECT_TRUE(all_close(got, want, 1e-4, 1e-4)) << "layer_norm";
        }
    }
}

// Views whose rows are not adjacent (a column slice of a wider matrix): the
// ops must follow the byte strides and leave the gaps alone.
TEST_P(OpsTest, StridedRows) {
    const int64_t n = 33, rows = 5, pitch = 40;
    auto x = random_floats(static_cast<size_t>(pitch * rows), 17);
    auto b = random_floats(static_cast<size_t>(pitch * rows), 18);
    std::vector<float> got(static_cast<size_t>(pitch * rows), 99.0f), want = got;
    auto strided = [&](std::vector<float>& data) {
        auto v = TensorView::contiguous(ElementType::F32, data.data(), {n, rows});
        v.nb[1] = pitch * sizeof(float);
        v.nb[2] = v.nb[3] = v.nb[1] * rows;
        return v;
    };
    ops_->rms_norm(strided(x), nullptr, 1e-6f, strided(got));
    ref_.rms_norm(strided(x), nullptr, 1e-6f, strided(want));
    EXPECT_TRUE(all_close(got, want, 1e-6, 1e-5));
    ops_->add(strided(x), strided(b), strided(got));
    ref_.add(strided(x), strided(b), strided(want));
    EXPECT_TRUE(all_close(got, want, 0, 1e-7));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = n; i < pitch; ++i) ASSERT_EQ(got[static_cast<size_t>(r * pitch + i)], 99.0f);
    }
}

TEST_P(OpsTest, RejectsBadShapes) {
    std::vector<float> a(12, 1.0f), b(8, 1.0f);
    const auto va = TensorView::contiguous(ElementType::F32, a.data(), {4, 3});
    const auto vb = TensorView::contiguous(ElementType::F32, b.data(), {4, 2});
    EXPECT_THROW(ops_->add(va, vb, va), Error);
    EXPECT_THROW(ops_->silu(va, vb), Error);
    EXPECT_THROW(ops_->rms_norm(va, nullptr, -1.0f, va), Error);
    std::vector<uint16_t> h(12);
    const auto vh = TensorView::contiguous(ElementType::F16, h.data(), {4, 3});
    EXPECT_THROW(ops_->scale(vh, 2.0f, vh), Error);
}

CRIA_OPS_INSTANTIATE(OpsTest);

}  // namespace
}  // namespace cria::ops
