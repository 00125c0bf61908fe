// The gated delta-net block of qwen3next and qwen35 (llama.cpp's
// build_layer_attn_linear): from h = rms_norm(x),
//   [q; k; v] = attn_qkv h,  z = attn_gate h,
//   beta = sigmoid(b),  g = ssm_a * softplus(a + ssm_dt.bias)   (per value head;
//     b, a from ssm_beta / ssm_alpha, or from qwen3next's ssm_ba grouped by key head),
//   [q; k; v] <- silu(ssm_conv([q; k; v]))   (the convolution keeps its last inputs),
//   q, k <- L2-normalised per head,
//   o = gated delta rule (the state: one d x d matrix per value head),
//   o <- rms_norm(o) * ssm_norm * silu(z) per value head,
//   x += ssm_out o.
// Each sequence of the micro-batch is one run of tokens over its own state
// (memory.recurrent_state), advanced in one call of the rule (the chunked
// form for prompts). Inside a speculative checkpoint the memory keeps the
// state after every position (keeps_every_position): the run then advances
// one token at a time and records each (record_position).

#include <algorithm>
#include <cmath>

#include "model/blocks.h"
#include "model/sequence_runs.h"

namespace cria::model::blocks {
namespace {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // ggml's threshold

ops::TensorView columns(std::vector<float>& buf, int64_t rows, int64_t first, int64_t n) {
    return ops::TensorView::contiguous(ElementType::F32, buf.data() + first * rows, {rows, n});
}

}  // namespace

void delta_net_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const HParams::DeltaNet& dn = hp.delta_net;
    const DeltaNetWeights& dw = s.w.layers[layer].delta;
    Workspace& ws = s.ws;
    const int64_t n = s.n, d = dn.head_dim, Hk = dn.n_k_heads, Hv = dn.n_v_heads, C = dn.n_conv();
    const int64_t r = Hv / Hk;

    const ops::TensorView x = view(ws.x, hp.n_embd, n), h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, s.w.layers[layer].attn_norm.data(), hp.norm_rms_eps, h);
    linear(s, dw.qkv, h, view(ws.delta_qkv, C, n));
    linear(s, dw.z, h, view(ws.delta_z, dn.n_value(), n));

    // beta and the log decay g per value head and token.
    float* beta = ws.delta_beta.data();
    float* g = ws.delta_g.data();
    if (dw.beta.present()) {
        linear(s, dw.beta, h, view(ws.delta_beta, Hv, n));
        linear(s, dw.alpha, h, view(ws.delta_g, Hv, n));
    } else {  // qwen3next: per key head r beta logits then r alpha logits, after the beta rows
        float* ba = beta + Hv * n;
        linear(s, dw.ba, h, ops::TensorView::contiguous(ElementType::F32, ba, {2 * Hv, n}));
        for (int64_t t = 0; t < n; ++t)
            for (int64_t j = 0; j < Hk; ++j)
                for (int64_t i = 0; i < r; ++i) {
                    beta[t * Hv + j * r + i] = ba[t * 2 * Hv + j * 2 * r + i];
                    g[t * Hv + j * r + i] = ba[t * 2 * Hv + j * 2 * r + r + i];
                }
    }
    for (int64_t t = 0; t < n; ++t)
        for (int64_t v = 0; v < Hv; ++v) {
            float& b = beta[t * Hv + v];
            b = 1.0f / (1.0f + std::exp(-b));
            float& gv = g[t * Hv + v];
            gv = dw.a[static_cast<size_t>(v)] * softplus(gv + dw.dt_bias[static_cast<size_t>(v)]);
        }

    ops::GatedDeltaParams gp;
    gp.scale = 1.0f / std::sqrt(static_cast<float>(d));
    gp.head_map = dn.grouped_heads ? ops::DeltaHeadMap::Grouped : ops::DeltaHeadMap::Tiled;
    for (const SequenceRun& run : sequence_runs(s.in)) {
        const RecurrentState st = s.memory.recurrent_state(layer, run.seq);
        const ops::TensorView matrices = ops::TensorView::contiguous(ElementType::F32, st.ssm, {d * d, Hv});
        const bool record = s.memory.keeps_every_position(layer, run.seq);
        const int64_t step = record ? 1 : run.n;
        for (int64_t t0 = run.first; t0 < run.first + run.n; t0 += step) {
            const ops::TensorView in = columns(ws.delta_qkv, C, t0, step), conv = columns(ws.delta_conv, C, t0, step);
            s.ops.ssm_conv(in, dw.conv.data(), dn.conv_kernel, st.conv, conv);
            s.ops.silu(conv, conv);
            // q, k: L2 over each head, as rms_norm with eps^2/d then 1/sqrt(d):
            // x / sqrt(|x|^2 + eps^2), which is x / max(|x|, eps) to float precision.
            const auto part = [&](int64_t offset, int64_t heads) {
                ops::TensorView v = ops::TensorView::contiguous(ElementType::F32, ws.delta_conv.data() + t0 * C + offset,
                                                                {d, heads, step});
                v.nb[2] = static_cast<size_t>(C) * sizeof(float);
                return v;
            };
            const ops::TensorView q = part(0, Hk), k = part(dn.n_key(), Hk), v = part(2 * dn.n_key(), Hv);
            const float eps = hp.norm_rms_eps;
            for (const ops::TensorView& qk : {q, k}) {
                s.ops.rms_norm(qk, nullptr, eps * eps / static_cast<float>(d), qk);
                s.ops.scale(qk, 1.0f / std::sqrt(static_cast<float>(d)), qk);
            }
            s.ops.gated_delta_net(
                q, k, v, ops::TensorView::contiguous(ElementType::F32, g + t0 * Hv, {Hv, step}),
                ops::TensorView::contiguous(ElementType::F32, beta + t0 * Hv, {Hv, step}), matrices, gp,
                ops::TensorView::contiguous(ElementType::F32, ws.delta_out.data() + t0 * dn.n_value(), {d, Hv, step}));
            if (record) s.memory.record_position(layer, run.seq, s.in.positions[t0]);
        }
    }

    // Gated RMSNorm per value head, then the output projection.
    const ops::TensorView o = ops::TensorView::contiguous(ElementType::F32, ws.delta_out.data(), {d, Hv, n});
    s.ops.rms_norm(o, dw.norm.data(), hp.norm_rms_eps, o);
    const ops::TensorView z = ops::TensorView::contiguous(ElementType::F32, ws.delta_z.data(), {d, Hv, n});
    s.ops.swiglu(z, o, o);  // silu(z) * o
    const ops::TensorView out = view(ws.o, hp.n_embd, n);
    linear(s, dw.out, view(ws.delta_out, dn.n_value(), n), out);
    s.ops.add(x, out, x);
}

}  // namespace cria::model::blocks
