// Ops::gated_delta_net of CpuOps against the double ReferenceOps: the
// recurrent form and the chunked form, tiled and grouped head maps, on
// awkward head sizes, head counts and token counts (chunks of 32 cut
// anywhere); the two forms against each other; a sequence cut into calls
// equal to one call (the state carries everything); strided views equal
// contiguous ones; strong decays stay finite; bad shapes are refused.

#include <cmath>
#include <random>
#include <vector>

#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::all_close;
using GatedDeltaNetTest = test::OpsFixture;

// Inputs as the models feed them: q and k L2-normalised per head, beta a
// sigmoid, g a log decay in [-3, 0] (some close to 0: long memory).
struct DeltaInputs {
    int64_t d, n_k_heads, n_v_heads, n_tokens;
    std::vector<float> q, k, v, g, beta, state;

    DeltaInputs(int64_t d_, int64_t hk, int64_t hv, int64_t t, uint32_t seed, float g_min = -3.0f)
        : d(d_), n_k_heads(hk), n_v_heads(hv), n_tokens(t) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_real_distribution<float> unit(0.0f, 1.0f);
        const auto unit_rows = [&](std::vector<float>& x, int64_t rows) {
            x.resize(static_cast<size_t>(rows * d));
            for (int64_t r = 0; r < rows; ++r) {
                double norm = 0;
                for (int64_t i = 0; i < d; ++i) norm += std::pow(x[r * d + i] = normal(rng), 2);
                for (int64_t i = 0; i < d; ++i) x[r * d + i] /= static_cast<float>(std::sqrt(norm));
            }
        };
        unit_rows(q, hk * t);
        unit_rows(k, hk * t);
        v.resize(static_cast<size_t>(d * hv * t));
        for (float& x : v) x = normal(rng);
        g.resize(static_cast<size_t>(hv * t));
        beta.resize(g.size());
        for (float& x : g) x = g_min * unit(rng) * unit(rng);
        for (float& x : beta) x = 1.0f / (1.0f + std::exp(-2.0f * normal(rng)));
        state.resize(static_cast<size_t>(d * d * hv));
        for (float& x : state) x = 0.3f * normal(rng);
    }

    // Runs tokens [t0, t0 + n) through `ops` with the state `st`, into `out`.
    void run(Ops& ops, const GatedDeltaParams& p, std::vector<float>& st, std::vector<float>& out, int64_t t0,
             int64_t n) const {
        auto* qp = const_cast<float*>(q.data()) + t0 * d * n_k_heads;
        auto* kp = const_cast<float*>(k.data()) + t0 * d * n_k_heads;
        auto* vp = const_cast<float*>(v.data()) + t0 * d * n_v_heads;
        auto* gp = const_cast<float*>(g.data()) + t0 * n_v_heads;
        auto* bp = const_cast<float*>(beta.data()) + t0 * n_v_heads;
        out.resize(static_cast<size_t>(d * n_v_heads * n_tokens));
        ops.gated_delta_net(TensorView::contiguous(ElementType::F32, qp, {d, n_k_heads, n}),
                            TensorView::contiguous(ElementType::F32, kp, {d, n_k_heads, n}),
                            TensorView::contiguous(ElementType::F32, vp, {d, n_v_heads, n}),
                            TensorView::contiguous(ElementType::F32, gp, {n_v_heads, n}),
                            TensorView::contiguous(ElementType::F32, bp, {n_v_heads, n}),
                            TensorView::contiguous(ElementType::F32, st.data(), {d * d, n_v_heads}), p,
                            TensorView::contiguous(ElementType::F32, out.data() + t0 * d * n_v_heads,
                                                   {d, n_v_heads, n}));
    }
};

struct Shape {
    int64_t d, hk, hv, t;
};

TEST_P(GatedDeltaNetTest, BothFormsMatchReference) {
    const Shape shapes[] = {{1, 1, 1, 1}, {7, 1, 3, 5}, {33, 2, 6, 64}, {16, 3, 3, 65}, {64, 2, 4, 130}, {128, 1, 2, 70}};
    uint32_t seed = 1;
    for (const Shape& sh : shapes) {
        const DeltaInputs in(sh.d, sh.hk, sh.hv, sh.t, seed++);
        for (DeltaHeadMap map : {DeltaHeadMap::Tiled, DeltaHeadMap::Grouped}) {
            GatedDeltaParams p;
            p.scale = 1.0f / std::sqrt(static_cast<float>(sh.d));
            p.head_map = map;
            std::vector<float> ref_state = in.state, ref_out;
            in.run(ref_, p, ref_state, ref_out, 0, sh.t);
            for (DeltaForm form : {DeltaForm::Recurrent, DeltaForm::Chunked, DeltaForm::Auto}) {
                SCOPED_TRACE(::testing::Message() << "d " << sh.d << " heads " << sh.hk << "/" << sh.hv << " tokens "
                                                  << sh.t << " map " << static_cast<int>(map) << " form "
                                                  << static_cast<int>(form));
                p.form = form;
                std::vector<float> state = in.state, out;
                in.run(*ops_, p, state, out, 0, sh.t);
                EXPECT_TRUE(all_close(out, ref_out, 2e-4, 2e-4));
                EXPECT_TRUE(all_close(state, ref_state, 2e-4, 2e-4));
            }
        }
    }
}

TEST_P(GatedDeltaNetTest, ChunkedEqualsRecurrent) {
    const DeltaInputs in(48, 2, 4, 200, 7);
    GatedDeltaParams p;
    p.scale = 0.125f;
    std::vector<float> rec_state = in.state, chunk_state = in.state, rec_out, chunk_out;
    p.form = DeltaForm::Recurrent;
    in.run(*ops_, p, rec_state, rec_out, 0, in.n_tokens);
    p.form = DeltaForm::Chunked;
    in.run(*ops_, p, chunk_state, chunk_out, 0, in.n_tokens);
    EXPECT_TRUE(all_close(chunk_out, rec_out, 1e-4, 1e-4));
    EXPECT_TRUE(all_close(chunk_state, rec_state, 1e-4, 1e-4));
}

TEST_P(GatedDeltaNetTest, CallsCarryTheStateLikeOneCall) {
    const DeltaInputs in(20, 1, 3, 75, 11);
    GatedDeltaParams p;
    p.scale = 0.2f;
    std::vector<float> whole_state = in.state, whole_out;
    p.form = DeltaForm::Chunked;
    in.run(*ops_, p, whole_state, whole_out, 0, 75);
    // One token, a prompt crossing a chunk boundary, then one-token steps.
    std::vector<float> state = in.state, out;
    p.form = DeltaForm::Auto;
    in.run(*ops_, p, state, out, 0, 1);
    in.run(*ops_, p, state, out, 1, 70);
    for (int64_t t = 71; t < 75; ++t) in.run(*ops_, p, state, out, t, 1);
    EXPECT_TRUE(all_close(out, whole_out, 1e-4, 1e-4));
    EXPECT_TRUE(all_close(state, whole_state, 1e-4, 1e-4));
}

TEST_P(GatedDeltaNetTest, StrongDecayStaysFinite) {
    DeltaInputs in(32, 2, 2, 100, 13, -60.0f);
    for (size_t i = 0; i < in.g.size(); i += 3) in.g[i] = -1000.0f;  // exp underflows to 0: a forgotten past
    GatedDeltaParams p;
    p.scale = 0.25f;
    std::vector<float> ref_state = in.state, ref_out;
    in.run(ref_, p, ref_state, ref_out, 0, in.n_tokens);
    for (DeltaForm form : {DeltaForm::Recurrent, DeltaForm::Chunked}) {
        p.form = form;
        std::vector<float> state = in.state, out;
        in.run(*ops_, p, state, out, 0, in.n_tokens);
        EXPECT_TRUE(all_close(out, ref_out, 2e-4, 2e-4));
        EXPECT_TRUE(all_close(state, ref_state, 2e-4, 2e-4));
    }
}

// q, k, v and out as views with gaps between heads and between tokens (as
// slices of a fused projection): the same results as contiguous tensors,
// in both forms, across chunk boundaries, with grouped value heads.
TEST_P(GatedDeltaNetTest, StridedViewsMatchContiguous) {
    const DeltaInputs in(40, 2, 6, 75, 17);
    const int64_t d = in.d, T = in.n_tokens;
    // A copy of x [d, heads, T] with rows d + 3 apart and tokens heads * (d + 3) + 5 apart.
    const auto strided = [&](const std::vector<float>& x, int64_t heads, std::vector<float>& buf) {
        const int64_t row = d + 3, tok = heads * row + 5;
        buf.assign(static_cast<size_t>(tok * T), -7.0f);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < heads; ++h)
                std::copy_n(&x[(t * heads + h) * d], d, &buf[t * tok + h * row]);
        TensorView view;
        view.type = ElementType::F32;
        view.ne = {d, heads, T, 1};
        view.nb = {sizeof(float), row * sizeof(float), tok * sizeof(float), tok * T * sizeof(float)};
        view.data = buf.data();
        return view;
    };
    for (DeltaForm form : {DeltaForm::Recurrent, DeltaForm::Chunked}) {
        SCOPED_TRACE(::testing::Message() << "form " << static_cast<int>(form));
        GatedDeltaParams p;
        p.scale = 0.15f;
        p.form = form;
        p.head_map = DeltaHeadMap::Grouped;
        std::vector<float> dense_state = in.state, dense_out;
        in.run(*ops_, p, dense_state, dense_out, 0, T);
        std::vector<float> qb, kb, vb, ob, state = in.state;
        const TensorView q = strided(in.q, in.n_k_heads, qb), k = strided(in.k, in.n_k_heads, kb);
        const TensorView v = strided(in.v, in.n_v_heads, vb);
        const TensorView o = strided(std::vector<float>(in.v.size(), 0.0f), in.n_v_heads, ob);
        ops_->gated_delta_net(q, k, v, TensorView::contiguous(ElementType::F32, in.g.data(), {in.n_v_heads, T}),
                              TensorView::contiguous(ElementType::F32, in.beta.data(), {in.n_v_heads, T}),
                              TensorView::contiguous(ElementType::F32, state.data(), {d * d, in.n_v_heads}), p, o);
        std::vector<float> out(dense_out.size());
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < in.n_v_heads; ++h)
                std::copy_n(o.row_f32(h, t), d, &out[(t * in.n_v_heads + h) * d]);
        EXPECT_TRUE(all_close(out, dense_out, 1e-6, 1e-6));
        EXPECT_TRUE(all_close(state, dense_state, 1e-6, 1e-6));
        // The gaps are left as they were.
        const int64_t out_tok = in.n_v_heads * (d + 3) + 5;
        for (int64_t t = 0; t < T; ++t) EXPECT_EQ(ob[static_cast<size_t>((t + 1) * out_tok - 1)], -7.0f);
    }
}

TEST_P(GatedDeltaNetTest, RefusesBadShapes) {
    std::vector<float> buf(4096, 0.5f);
    const auto t = [&](std::initializer_list<int64_t> shape) {
        return TensorView::contiguous(ElementType::F32, buf.data(), shape);
    };
    std::vector<float> out(4096);
    const auto o = TensorView::contiguous(ElementType::F32, out.data(), {8, 4, 3});
    GatedDeltaParams p;
    // Good call first, so the refusals below are about the one bad operand.
    EXPECT_NO_THROW(ops_->gated_delta_net(t({8, 2, 3}), t({8, 2, 3}), t({8, 4, 3}), t({4, 3}), t({4, 3}),
                                          t({64, 4}), p, o));
    EXPECT_THROW(ops_->gated_delta_net(t({8, 3, 3}), t({8, 3, 3}), t({8, 4, 3}), t({4, 3}), t({4, 3}), t({64, 4}),
                                       p, o),
                 Error);  // 4 value heads over 3 key heads
    EXPECT_THROW(ops_->gated_delta_net(t({7, 2, 3}), t({7, 2, 3}), t({8, 4, 3}), t({4, 3}), t({4, 3}), t({64, 4}),
                                       p, o),
                 Error);  // key size differs from value size
    EXPECT_THROW(ops_->gated_delta_net(t({8, 2, 3}), t({8, 2, 3}), t({8, 4, 3}), t({4, 2}), t({4, 3}), t({64, 4}),
                                       p, o),
                 Error);  // g of the wrong token count
    EXPECT_THROW(ops_->gated_delta_net(t({8, 2, 3}), t({8, 2, 3}), t({8, 4, 3}), t({4, 3}), t({4, 3}), t({63, 4}),
                                       p, o),
                 Error);  // state too small
    std::vector<uint16_t> half(4096);
    EXPECT_THROW(ops_->gated_delta_net(TensorView::contiguous(ElementType::F16, half.data(), {8, 2, 3}), t({8, 2, 3}),
                                       t({8, 4, 3}), t({4, 3}), t({4, 3}), t({64, 4}), p, o),
                 Error);
}

CRIA_OPS_INSTANTIATE(GatedDeltaNetTest);

}  // namespace
}  // namespace cria::ops
