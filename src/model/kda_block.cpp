// The Kimi delta attention block of kimi-linear, bailingmoe3 and kimi-k3
// (llama.cpp's src/models/kimi-linear.cpp, bailingmoe3.cpp, kimi-k3.cpp, their
// recurrent layers):
// from h = rms_norm(x) (attn_norm),
//   q, k, v = silu(conv(attn_q h)), silu(conv(attn_k h)), silu(conv(attn_v h))
//     (three causal convolutions, each keeping its last inputs),
//   a = ssm_f_b (ssm_f_a h) + ssm_dt.bias   (or ssm_f_a h + bias: one full-rank matrix)
//   g = A softplus(a) (kimi-linear), or lb sigmoid(A a) (a gate lower bound lb < 0)
//     per key channel, A = ssm_a of the channel's head (kimi-k3: -ssm_a in the sigmoid),
//   beta = sigmoid(ssm_beta h) per head,
//   q, k <- L2-normalised per head,
//   o = the delta rule with a decay per key channel (kimi_delta_attention),
//   o <- rms_norm(o) * ssm_norm * sigmoid(ssm_g_b (ssm_g_a h)) per head (one full-rank
//     ssm_g_a / ssm_g when the file has no ssm_g_b),
//   x += attn_output o.
// Each sequence of the micro-batch is one run of tokens over its own state
// (memory.recurrent_state: the three convolutions' states [q | k | v], then
// the heads' matrices), advanced in one call of the rule (the chunked form
// for prompts). Inside a speculative checkpoint the memory keeps the state
// after every position: the run then advances one token at a time and
// records each, as the gated delta-net block does.

#include <cmath>

#include "model/blocks.h"
#include "model/sequence_runs.h"

namespace cria::model::blocks {
namespace {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // ggml's threshold
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Tokens [first, first + n) of a [rows, n_total] buffer.
ops::TensorView columns(std::vector<float>& buf, int64_t rows, int64_t first, int64_t n) {
    return ops::TensorView::contiguous(ElementType::F32, buf.data() + first * rows, {rows, n});
}

// y = second (first x), or first x when the layer has one full-rank matrix.
// (rank: the width of the middle).
void low_rank(Step& s, const Linear& first, const Linear& second, const ops::TensorView& x, int64_t rank,
              std::vector<float>& mid, const ops::TensorView& y) {
    if (!second.present()) {
        linear(s, first, x, y);
        return;
    }
    const ops::TensorView m = view(mid, rank, x.ne[1]);
    linear(s, first, x, m);
    linear(s, second, m, y);
}

}  // namespace

void kda_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const HParams::Kda& kd = hp.kda;
    const KdaWeights& kw = s.w.layers[layer].kda;
    Workspace& ws = s.ws;
    const int64_t n = s.n, d = kd.head_dim, H = kd.n_heads, D = kd.n_value(), K = kd.conv_kernel;

    const ops::TensorView x = view(ws.x, hp.n_embd, n), h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, s.w.layers[layer].attn_norm.data(), hp.norm_rms_eps, h);
    linear(s, kw.q, h, view(ws.kda_q, D, n));
    linear(s, kw.k, h, view(ws.kda_k, D, n));
    linear(s, kw.v, h, view(ws.kda_v, D, n));

    // The log decay per key channel and token, beta per head and token.
    low_rank(s, kw.f_a, kw.f_b, h, d, ws.kda_low, view(ws.kda_g, D, n));
    const float lb = kd.gate_lower_bound;
    for (int64_t t = 0; t < n; ++t)
        for (int64_t c = 0; c < D; ++c) {
            float& g = ws.kda_g[static_cast<size_t>(t * D + c)];
            const float a = g + kw.dt_bias[static_cast<size_t>(c)];
            const float A = (kd.gate_negates_a ? -1.0f : 1.0f) * kw.a[static_cast<size_t>(c / d)];
            g = lb < 0.0f ? lb * sigmoid(A * a) : A * softplus(a);
        }
    linear(s, kw.beta, h, view(ws.kda_beta, H, n));
    for (int64_t i = 0; i < H * n; ++i) ws.kda_beta[static_cast<size_t>(i)] = sigmoid(ws.kda_beta[static_cast<size_t>(i)]);
    low_rank(s, kw.g_a, kw.g_b, h, d, ws.kda_low, view(ws.kda_gate, D, n));

    ops::GatedDeltaParams gp;
    gp.scale = 1.0f / std::sqrt(static_cast<float>(d));
    const int64_t conv_part = (K - 1) * D;  // one convolution's state
    for (const SequenceRun& run : sequence_runs(s.in)) {
        const RecurrentState st = s.memory.recurrent_state(layer, run.seq);
        const ops::TensorView matrices = ops::TensorView::contiguous(ElementType::F32, st.ssm, {d * d, H});
        const bool record = s.memory.keeps_every_position(layer, run.seq);
        const int64_t step = record ? 1 : run.n;
        for (int64_t t0 = run.first; t0 < run.first + run.n; t0 += step) {
            const std::vector<float>* taps[] = {&kw.conv_q, &kw.conv_k, &kw.conv_v};
            std::vector<float>* bufs[] = {&ws.kda_q, &ws.kda_k, &ws.kda_v};
            for (int i = 0; i < 3; ++i) {
                const ops::TensorView part = columns(*bufs[i], D, t0, step);
                s.ops.ssm_conv(part, taps[i]->data(), K, st.conv + i * conv_part, part);
                s.ops.silu(part, part);
            }
            const auto heads = [&](std::vector<float>& buf) {
                return ops::TensorView::contiguous(ElementType::F32, buf.data() + t0 * D, {d, H, step});
            };
            const ops::TensorView q = heads(ws.kda_q), k = heads(ws.kda_k), v = heads(ws.kda_v);
            // L2 over each head, as rms_norm with eps^2/d then 1/sqrt(d):
            // x / sqrt(|x|^2 + eps^2), which is x / max(|x|, eps) to float precision.
            const float eps = hp.norm_rms_eps;
            for (const ops::TensorView& qk : {q, k}) {
                s.ops.rms_norm(qk, nullptr, eps * eps / static_cast<float>(d), qk);
                s.ops.scale(qk, 1.0f / std::sqrt(static_cast<float>(d)), qk);
            }
            s.ops.kimi_delta_attention(
                q, k, v, heads(ws.kda_g),
                ops::TensorView::contiguous(ElementType::F32, ws.kda_beta.data() + t0 * H, {H, step}), matrices, gp,
                heads(ws.kda_out));
            if (record) s.memory.record_position(layer, run.seq, s.in.positions[t0]);
        }
    }

    // RMSNorm per head times the sigmoid gate, then the output projection.
    const ops::TensorView o = ops::TensorView::contiguous(ElementType::F32, ws.kda_out.data(), {d, H, n});
    s.ops.rms_norm(o, kw.norm.data(), hp.norm_rms_eps, o);
    for (int64_t i = 0; i < D * n; ++i) ws.kda_gate[static_cast<size_t>(i)] = sigmoid(ws.kda_gate[static_cast<size_t>(i)]);
    s.ops.mul(o, ops::TensorView::contiguous(ElementType::F32, ws.kda_gate.data(), {d, H, n}), o);
    const ops::TensorView out = view(ws.o, hp.n_embd, n);
    linear(s, kw.out, view(ws.kda_out, D, n), out);
    s.ops.add(x, out, x);
}

}  // namespace cria::model::blocks
