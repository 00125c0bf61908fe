#include "model/relu2_ffn.h"

#include <vector>

namespace cria::model::blocks {
namespace {

// relu(v)² in place over n values (ggml's relu then sqr).
void relu_squared(float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] * v[i] : 0.0f;
}

// Multiplies each (token, rank) block of `rows` values by its expert's scale.
void scale_by_expert(const std::vector<float>& scale, const int32_t* ids, int64_t rows, int64_t k, int64_t n, float* y) {
    if (scale.empty()) return;
    for (int64_t i = 0; i < k * n; ++i)
        for (int64_t r = 0; r < rows; ++r) y[i * rows + r] *= scale[static_cast<size_t>(ids[i])];
}

}  // namespace

void relu2_ffn_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, F = lw.up.n_out();
    const ops::TensorView x = view(ws.x, hp.n_embd, n), h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, lw.attn_norm.data(), hp.norm_rms_eps, h);
    const ops::TensorView u = view(ws.up, F, n);
    linear(s, lw.up, h, u);
    relu_squared(ws.up.data(), F * n);
    const ops::TensorView o = view(ws.o, hp.n_embd, n);
    linear(s, lw.down, u, o);
    s.ops.add(x, o, x);
}

void relu2_moe_block(Step& s, uint32_t layer) {
    using ops::TensorView;
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, E = hp.n_embd, F = hp.n_ff_exp, k = hp.n_expert_used;
    const TensorView x = view(ws.x, E, n), h = view(ws.h, E, n);
    s.ops.rms_norm(x, lw.attn_norm.data(), hp.norm_rms_eps, h);

    const TensorView router = view(ws.router, hp.n_expert, n);
    linear(s, lw.gate_inp, h, router);
    ops::MoeRouteParams rp;
    rp.n_used = k;
    rp.gating = ops::MoeGating::Sigmoid;
    rp.norm_weights = hp.expert_weights_norm;
    rp.weights_scale = hp.expert_weights_scale;
    rp.selection_bias = lw.exp_probs_b.empty() ? nullptr : lw.exp_probs_b.data();
    const int32_t* ids = ws.expert_ids.data();
    s.ops.moe_route(router, rp, ws.expert_ids.data(), view(ws.expert_weights, k, n));

    // The experts' input: the latent projection of h (n_embd wide, as the table
    // declares it), or h itself; kept in ws.o until the experts have read it.
    TensorView in = TensorView::contiguous(ElementType::F32, ws.h.data(), {E, 1, n});
    if (lw.latent_down.present()) {
        linear(s, lw.latent_down, h, view(ws.o, E, n));
        in = TensorView::contiguous(ElementType::F32, ws.o.data(), {E, 1, n});
    }
    const TensorView up = TensorView::contiguous(ElementType::F32, ws.expert_up.data(), {F, k, n});
    s.ops.matmul_id(lw.up_exps.w, in, ids, k, up);
    scale_by_expert(lw.up_exps.scale, ids, F, k, n, ws.expert_up.data());
    relu_squared(ws.expert_up.data(), F * k * n);
    const TensorView down = TensorView::contiguous(ElementType::F32, ws.expert_out.data(), {E, k, n});
    s.ops.matmul_id(lw.down_exps.w, up, ids, k, down);
    scale_by_expert(lw.down_exps.scale, ids, E, k, n, ws.expert_out.data());
    // The weighted sum over the ranks, in rank order (llama.cpp's), into ws.o.
    for (int64_t t = 0; t < n; ++t) {
        float* ot = ws.o.data() + t * E;
        for (int64_t j = 0; j < k; ++j) {
            const float wj = ws.expert_weights[static_cast<size_t>(t * k + j)];
            const float* y = ws.expert_out.data() + (t * k + j) * E;
            for (int64_t r = 0; r < E; ++r) ot[r] = j == 0 ? wj * y[r] : ot[r] + wj * y[r];
        }
    }
    const TensorView moe = view(ws.o, E, n);
    if (lw.latent_up.present()) {
        linear(s, lw.latent_up, moe, view(ws.expert_out, E, n));
        s.ops.add(x, view(ws.expert_out, E, n), x);
    } else {
        s.ops.add(x, moe, x);
    }
    if (lw.up_shexp.present()) {  // the shared expert, at full width on h
        const int64_t Fs = hp.n_ff_shexp;
        const TensorView su = view(ws.up, Fs, n);
        linear(s, lw.up_shexp, h, su);
        relu_squared(ws.up.data(), Fs * n);
        const TensorView shared = view(ws.expert_out, E, n);
        linear(s, lw.down_shexp, su, shared);
        s.ops.add(x, shared, x);
    }
}

}  // namespace cria::model::blocks
