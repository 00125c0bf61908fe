// Ops::lightning_attention of CpuOps against the double ReferenceOps: the
// recurrent form and the blocked form on awkward head sizes, head counts and
// token counts (blocks of 64 cut anywhere), on q, k and v interleaved per
// head as MiniMax-01's projection leaves them (strided rows); the two forms
// against each other; a sequence cut into calls equal to one call; a decay
// rate of 0 (no forgetting) and a strong one; bad arguments are refused.

#include <cmath>
#include <random>
#include <vector>

#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::all_close;
using LightningAttentionTest = test::OpsFixture;

// [q_h | k_h | v_h] per head and token, as silu(attn_qkv x) is laid out.
struct LightningInputs {
    int64_t d, n_head, n_tokens;
    std::vector<float> qkv, rates, state;

    LightningInputs(int64_t d_, int64_t h, int64_t t, uint32_t seed) : d(d_), n_head(h), n_tokens(t) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_real_distribution<float> unit(0.0f, 1.0f);
        qkv.resize(static_cast<size_t>(3 * d * h * t));
        const float s = 1.0f / std::sqrt(static_cast<float>(d));
        for (float& x : qkv) x = s * normal(rng);
        rates.resize(static_cast<size_t>(h));
        for (float& r : rates) r = 0.8f * unit(rng) * unit(rng);  // some close to 0: long memory
        state.resize(static_cast<size_t>(d * d * h));
        for (float& x : state) x = 0.3f * normal(rng);
    }

    // q, k or v (part 0, 1, 2) of tokens [t0, t0 + n): rows d apart inside 3d-wide heads.
    TensorView part(int part, int64_t t0, int64_t n) const {
        float* base = const_cast<float*>(qkv.data()) + t0 * 3 * d * n_head + part * d;
        TensorView v = TensorView::contiguous(ElementType::F32, base, {d, n_head, n});
        v.nb[1] = static_cast<size_t>(3 * d) * sizeof(float);
        v.nb[2] = v.nb[1] * static_cast<size_t>(n_head);
        v.nb[3] = v.nb[2] * static_cast<size_t>(n);
        return v;
    }

    void run(Ops& ops, LightningForm form, std::vector<float>& st, std::vector<float>& out, int64_t t0,
             int64_t n) const {
        out.resize(static_cast<size_t>(d * n_head * n_tokens));
        LightningParams p;
        p.rates = rates.data();
        p.form = form;
        ops.lightning_attention(part(0, t0, n), part(1, t0, n), part(2, t0, n),
                                TensorView::contiguous(ElementType::F32, st.data(), {d * d, n_head}), p,
                                TensorView::contiguous(ElementType::F32, out.data() + t0 * d * n_head, {d, n_head, n}));
    }
};

struct Shape {
    int64_t d, h, t;
};

TEST_P(LightningAttentionTest, BothFormsMatchReference) {
    const Shape shapes[] = {{1, 1, 1}, {7, 3, 5}, {33, 2, 64}, {16, 3, 65}, {64, 4, 130}, {128, 1, 9}, {5, 7, 200}};
    uint32_t seed = 1;
    for (const Shape& sh : shapes) {
        const LightningInputs in(sh.d, sh.h, sh.t, seed++);
        std::vector<float> ref_state = in.state, ref_out;
        in.run(ref_, LightningForm::Recurrent, ref_state, ref_out, 0, sh.t);
        for (LightningForm form : {LightningForm::Recurrent, LightningForm::Blocked, LightningForm::Auto}) {
            SCOPED_TRACE(::testing::Message() << "d " << sh.d << " heads " << sh.h << " tokens " << sh.t << " form "
                                              << static_cast<int>(form));
            std::vector<float> state = in.state, out;
            in.run(*ops_, form, state, out, 0, sh.t);
            EXPECT_TRUE(all_close(out, ref_out, 2e-4, 2e-4));
            EXPECT_TRUE(all_close(state, ref_state, 2e-4, 2e-4));
        }
    }
}

TEST_P(LightningAttentionTest, BlockedEqualsRecurrent) {
    LightningInputs in(48, 3, 200, 7);
    in.rates = {0.0f, 0.05f, 3.0f};  // no forgetting, slow, strong (gamma^64 underflows nowhere near inf)
    std::vector<float> rec_state = in.state, blk_state = in.state, rec_out, blk_out;
    in.run(*ops_, LightningForm::Recurrent, rec_state, rec_out, 0, in.n_tokens);
    in.run(*ops_, LightningForm::Blocked, blk_state, blk_out, 0, in.n_tokens);
    EXPECT_TRUE(all_close(blk_out, rec_out, 1e-4, 1e-4));
    EXPECT_TRUE(all_close(blk_state, rec_state, 1e-4, 1e-4));
}

TEST_P(LightningAttentionTest, CallsCarryTheStateLikeOneCall) {
    const LightningInputs in(20, 3, 75, 11);
    std::vector<float> whole_state = in.state, whole_out;
    in.run(*ops_, LightningForm::Blocked, whole_state, whole_out, 0, 75);
    // One token, a prompt crossing a block boundary, then one-token steps.
    std::vector<float> state = in.state, out;
    in.run(*ops_, LightningForm::Auto, state, out, 0, 1);
    in.run(*ops_, LightningForm::Auto, state, out, 1, 70);
    for (int64_t t = 71; t < 75; ++t) in.run(*ops_, LightningForm::Auto, state, out, t, 1);
    EXPECT_TRUE(all_close(out, whole_out, 1e-4, 1e-4));
    EXPECT_TRUE(all_close(state, whole_state, 1e-4, 1e-4));
}

TEST_P(LightningAttentionTest, RefusesBadArguments) {
    std::vector<float> buf(4096, 0.5f), out(4096);
    const auto t = [&](std::initializer_list<int64_t> shape) {
        return TensorView::contiguous(ElementType::F32, buf.data(), shape);
    };
    const auto o = TensorView::contiguous(ElementType::F32, out.data(), {8, 4, 3});
    const float rates[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    LightningParams p;
    p.rates = rates;
    EXPECT_NO_THROW(ops_->lightning_attention(t({8, 4, 3}), t({8, 4, 3}), t({8, 4, 3}), t({64, 4}), p, o));
    EXPECT_THROW(ops_->lightning_attention(t({8, 4, 3}), t({8, 4, 2}), t({8, 4, 3}), t({64, 4}), p, o),
                 Error);  // k of another token count
    EXPECT_THROW(ops_->lightning_attention(t({8, 4, 3}), t({8, 4, 3}), t({8, 4, 3}), t({63, 4}), p, o),
                 Error);  // state too small
    const float negative[4] = {0.1f, -0.2f, 0.3f, 0.4f};
    p.rates = negative;
    EXPECT_THROW(ops_->lightning_attention(t({8, 4, 3}), t({8, 4, 3}), t({8, 4, 3}), t({64, 4}), p, o),
                 Error);  // a growing "decay"
    p.rates = nullptr;
    EXPECT_THROW(ops_->lightning_attention(t({8, 4, 3}), t({8, 4, 3}), t({8, 4, 3}), t({64, 4}), p, o), Error);
}

CRIA_OPS_INSTANTIATE(LightningAttentionTest);

}  // namespace
}  // namespace cria::ops
