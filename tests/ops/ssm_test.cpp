// The state-space ops of CpuOps against ReferenceOps (double): the causal
// depthwise convolution with state and the selective scan (Mamba-1 with a
// per-element A, Mamba-2 with a scalar A per head and grouped B/C), on
// awkward sizes, strided inputs, and carried across calls: a sequence cut in
// pieces gives the same outputs and state as in one call.

#include <cmath>
#include <utility>
#include <vector>

#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::random_floats;
using SsmOpsTest = test::OpsFixture;

TensorView f32(std::vector<float>& v, int64_t rows, int64_t n) {
    return TensorView::contiguous(ElementType::F32, v.data(), {rows, n});
}

// A [rows, n] view of the first `rows` values of every column of a wider buffer (a strided slice).
TensorView strided(std::vector<float>& v, int64_t offset, int64_t rows, int64_t stride, int64_t n) {
    TensorView t = TensorView::contiguous(ElementType::F32, v.data() + offset, {rows, n});
    t.nb[1] = static_cast<size_t>(stride) * sizeof(float);
    t.nb[2] = t.nb[3] = t.nb[1] * static_cast<size_t>(n);
    return t;
}

TEST_P(SsmOpsTest, ConvMatchesReferenceOnAwkwardSizes) {
    for (int64_t channels : {1, 7, 33, 257})
        for (int64_t kernel : {1, 2, 4, 5})
            for (int64_t tokens : {1, 2, 3, 17}) {
                SCOPED_TRACE(::testing::Message() << channels << " channels, kernel " << kernel << ", " << tokens << " tokens");
                const int64_t stride = channels + 3;  // the inputs are a slice of a wider projection
                auto x = random_floats(static_cast<size_t>(stride * tokens), 1);
                const auto w = random_floats(static_cast<size_t>(channels * kernel), 2);
                auto state = random_floats(static_cast<size_t>(channels * (kernel - 1)) + 1, 3);
                auto ref_state = state;
                std::vector<float> out(static_cast<size_t>(channels * tokens)), ref_out(out.size());
                ops_->ssm_conv(strided(x, 2, channels, stride, tokens), w.data(), kernel, state.data(), f32(out, channels, tokens));
                ref_.ssm_conv(strided(x, 2, channels, stride, tokens), w.data(), kernel, ref_state.data(),
                              f32(ref_out, channels, tokens));
                EXPECT_TRUE(test::all_close(out, ref_out, 1e-5, 1e-5));
                EXPECT_TRUE(test::all_close(state, ref_state, 0, 0));
            }
}

TEST_P(SsmOpsTest, ConvStateCarriesAcrossCallsIncludingShortOnes) {
    // Fewer tokens than the kernel's history: the new state still holds old state columns.
    const int64_t channels = 9, kernel = 4, tokens = 7;
    auto x = random_floats(static_cast<size_t>(channels * tokens), 4);
    const auto w = random_floats(static_cast<size_t>(channels * kernel), 5);
    std::vector<float> whole_state(static_cast<size_t>(channels * (kernel - 1)), 0.0f), piece_state = whole_state;
    std::vector<float> whole(x.size()), pieces(x.size());
    ops_->ssm_conv(f32(x, channels, tokens), w.data(), kernel, whole_state.data(), f32(whole, channels, tokens));
    const std::pair<int64_t, int64_t> pieces_of[] = {{0, 1}, {1, 1}, {2, 4}, {6, 1}};  // (first, n)
    for (const auto& [first, n] : pieces_of) {
        TensorView xin = TensorView::contiguous(ElementType::F32, x.data() + first * channels, {channels, n});
        TensorView o = TensorView::contiguous(ElementType::F32, pieces.data() + first * channels, {channels, n});
        ops_->ssm_conv(xin, w.data(), kernel, piece_state.data(), o);
    }
    EXPECT_TRUE(test::all_close(pieces, whole, 0, 0));
    EXPECT_TRUE(test::all_close(piece_state, whole_state, 0, 0));
}

TEST_P(SsmOpsTest, ConvInPlace) {
    const int64_t channels = 31, kernel = 4, tokens = 5;
    auto x = random_floats(static_cast<size_t>(channels * tokens), 6);
    const auto w = random_floats(static_cast<size_t>(channels * kernel), 7);
    std::vector<float> s1(static_cast<size_t>(channels * (kernel - 1)), 0.5f), s2 = s1, out(x.size());
    ops_->ssm_conv(f32(x, channels, tokens), w.data(), kernel, s1.data(), f32(out, channels, tokens));
    ops_->ssm_conv(f32(x, channels, tokens), w.data(), kernel, s2.data(), f32(x, channels, tokens));
    EXPECT_TRUE(test::all_close(x, out, 0, 0));
}

struct ScanCase {
    int64_t n_state, head_dim, n_head, n_group;
    bool scalar_a;
};

void run_scan(Ops& ops, const ScanCase& sc, int64_t tokens, uint32_t seed, std::vector<float>& state,
              std::vector<float>& y) {
    const int64_t d = sc.head_dim * sc.n_head, bc = sc.n_state * sc.n_group;
    // One projection row per token holding [x | B | C | dt] with padding: every input is a strided slice.
    const int64_t stride = d + 2 * bc + sc.n_head + 5;
    auto proj = random_floats(static_cast<size_t>(stride * tokens), seed);
    auto a = random_floats(static_cast<size_t>(sc.scalar_a ? sc.n_head : sc.n_head * sc.n_state), seed + 1, -2.0f, -0.1f);
    SsmScanParams p{sc.n_state, sc.head_dim, sc.n_head, sc.n_group, sc.scalar_a};
    y.assign(static_cast<size_t>(d * tokens), NAN);
    ops.ssm_scan(strided(proj, 0, d, stride, tokens), strided(proj, d + 2 * bc, sc.n_head, stride, tokens), a.data(),
                 strided(proj, d, bc, stride, tokens), strided(proj, d + bc, bc, stride, tokens), p, state.data(),
                 f32(y, d, tokens));
}

TEST_P(SsmOpsTest, ScanMatchesReferenceForMamba1AndMamba2) {
    const ScanCase cases[] = {
        {16, 1, 33, 1, false},  // Mamba-1: one channel per head, A per state element
        {7, 1, 5, 1, false},
        {16, 4, 6, 2, true},    // Mamba-2: heads of 4 channels, 2 groups
        {33, 3, 9, 3, true},
        {128, 8, 4, 4, true},
        {5, 2, 3, 1, true},
    };
    for (const ScanCase& sc : cases)
        for (int64_t tokens : {1, 2, 19}) {
            SCOPED_TRACE(::testing::Message() << "N " << sc.n_state << " P " << sc.head_dim << " H " << sc.n_head
                                              << " G " << sc.n_group << " scalar A " << sc.scalar_a << ", " << tokens
                                              << " tokens");
            auto state = random_floats(static_cast<size_t>(sc.n_state * sc.head_dim * sc.n_head), 9, -0.5f, 0.5f);
            auto ref_state = state;
            std::vector<float> y, ref_y;
            run_scan(*ops_, sc, tokens, 10, state, y);
            run_scan(ref_, sc, tokens, 10, ref_state, ref_y);
            EXPECT_TRUE(test::all_close(y, ref_y, 2e-5, 1e-4));
            EXPECT_TRUE(test::all_close(state, ref_state, 2e-5, 1e-4));
        }
}

TEST_P(SsmOpsTest, ScanSoftplusPassesLargeStepsThrough) {
    // dt above 20 is used as is (ggml's softplus threshold); below, log1p(exp(dt)).
    const SsmScanParams p{1, 1, 2, 1, true};
    std::vector<float> x{1.0f, 1.0f}, dt{25.0f, 0.5f}, a{-1e-3f, -1e-3f}, b{1.0f}, c{1.0f}, state{0.0f, 0.0f}, y(2);
    ops_->ssm_scan(f32(x, 2, 1), f32(dt, 2, 1), a.data(), f32(b, 1, 1), f32(c, 1, 1), p, state.data(), f32(y, 2, 1));
    EXPECT_FLOAT_EQ(y[0], 25.0f);
    EXPECT_NEAR(y[1], std::log1p(std::exp(0.5)), 1e-6);
}

TEST_P(SsmOpsTest, BadShapesAreRefused) {
    const SsmScanParams p{4, 2, 3, 2, true};  // groups do not divide the heads
    std::vector<float> v(64, 1.0f);
    EXPECT_THROW(ops_->ssm_scan(f32(v, 6, 1), f32(v, 3, 1), v.data(), f32(v, 8, 1), f32(v, 8, 1), p, v.data(), f32(v, 6, 1)),
                 Error);
    std::vector<float> out(8);
    EXPECT_THROW(ops_->ssm_conv(f32(v, 4, 2), v.data(), 0, v.data(), f32(out, 4, 2)), Error);
    EXPECT_THROW(ops_->ssm_conv(f32(v, 4, 2), v.data(), 3, v.data(), f32(out, 2, 4)), Error);
}

CRIA_OPS_INSTANTIATE(SsmOpsTest);

}  // namespace
}  // namespace cria::ops
