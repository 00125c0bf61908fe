// Ops::causal_conv of CpuOps against the double ReferenceOps on awkward
// channel, tap and token counts, with and without SiLU; the state carried
// across calls (including calls shorter than the state) equals one call;
// bad shapes are refused.

#include <vector>

#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::all_close;
using test::random_floats;
using CausalConvTest = test::OpsFixture;

void run(Ops& ops, std::vector<float>& x, int64_t channels, int64_t t0, int64_t n, std::vector<float>& w,
         int64_t taps, std::vector<float>& state, bool silu, std::vector<float>& out) {
    ops.causal_conv(TensorView::contiguous(ElementType::F32, x.data() + t0 * channels, {channels, n}),
                    TensorView::contiguous(ElementType::F32, w.data(), {taps, channels}),
                    TensorView::contiguous(ElementType::F32, state.data(), {taps - 1, channels}), silu,
                    TensorView::contiguous(ElementType::F32, out.data() + t0 * channels, {channels, n}));
}

TEST_P(CausalConvTest, MatchesReference) {
    uint32_t seed = 100;
    for (int64_t channels : {1, 7, 65, 257})
        for (int64_t taps : {1, 2, 4})
            for (int64_t tokens : {1, 2, 5, 33})
                for (bool silu : {false, true}) {
                    SCOPED_TRACE(::testing::Message() << "channels " << channels << " taps " << taps << " tokens "
                                                      << tokens << " silu " << silu);
                    auto x = random_floats(static_cast<size_t>(channels * tokens), seed++);
                    auto w = random_floats(static_cast<size_t>(channels * taps), seed++);
                    auto state = random_floats(static_cast<size_t>(channels * (taps - 1)), seed++);
                    auto ref_state = state;
                    std::vector<float> out(x.size()), ref_out(x.size());
                    run(*ops_, x, channels, 0, tokens, w, taps, state, silu, out);
                    run(ref_, x, channels, 0, tokens, w, taps, ref_state, silu, ref_out);
                    EXPECT_TRUE(all_close(out, ref_out, 1e-5, 1e-5));
                    EXPECT_EQ(state, ref_state);  // the state is a copy of inputs: exact
                }
}

TEST_P(CausalConvTest, CallsCarryTheStateLikeOneCall) {
    const int64_t channels = 19, taps = 4, tokens = 9;
    auto x = random_floats(static_cast<size_t>(channels * tokens), 5);
    auto w = random_floats(static_cast<size_t>(channels * taps), 6);
    const auto state0 = random_floats(static_cast<size_t>(channels * (taps - 1)), 7);
    auto whole_state = state0;
    std::vector<float> whole(x.size()), parts(x.size());
    run(*ops_, x, channels, 0, tokens, w, taps, whole_state, true, whole);
    auto state = state0;
    // Calls of 1 and 2 tokens: shorter than the 3 inputs the state keeps.
    run(*ops_, x, channels, 0, 1, w, taps, state, true, parts);
    run(*ops_, x, channels, 1, 2, w, taps, state, true, parts);
    run(*ops_, x, channels, 3, 1, w, taps, state, true, parts);
    run(*ops_, x, channels, 4, 5, w, taps, state, true, parts);
    EXPECT_EQ(parts, whole);
    EXPECT_EQ(state, whole_state);
}

TEST_P(CausalConvTest, RefusesBadShapes) {
    std::vector<float> buf(1024, 1.0f), out(1024);
    const auto t = [&](std::initializer_list<int64_t> shape) {
        return TensorView::contiguous(ElementType::F32, buf.data(), shape);
    };
    const auto o = TensorView::contiguous(ElementType::F32, out.data(), {8, 5});
    EXPECT_NO_THROW(ops_->causal_conv(t({8, 5}), t({4, 8}), t({3, 8}), true, o));
    EXPECT_THROW(ops_->causal_conv(t({8, 5}), t({4, 7}), t({3, 8}), true, o), Error);
    EXPECT_THROW(ops_->causal_conv(t({8, 5}), t({4, 8}), t({4, 8}), true, o), Error);
    EXPECT_THROW(ops_->causal_conv(t({8, 5}), t({4, 8}), t({3, 8}), true,
                                   TensorView::contiguous(ElementType::F32, out.data(), {8, 4})),
                 Error);
}

CRIA_OPS_INSTANTIATE(CausalConvTest);

}  // namespace
}  // namespace cria::ops
