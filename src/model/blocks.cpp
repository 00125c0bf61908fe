#include "model/blocks.h"

#include "cria/model/lora.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cria/core/error.h"
#include "model/ssm_block.h"

namespace cria::model::blocks {

using ops::TensorView;

TensorView view(std::vector<float>& buf, int64_t rows, int64_t n) {
    return TensorView::contiguous(ElementType::F32, buf.data(), {rows, n});
}

namespace {

TensorView vec_view(const std::vector<float>& v) {
    return TensorView::contiguous(ElementType::F32, v.data(), {static_cast<int64_t>(v.size())});
}

// out = act(gate, up), the activation of a gated feed-forward block.
void gated_activation(ops::Ops& ops, FfnActivation act, const TensorView& gate, const TensorView& up,
                      const TensorView& out) {
    switch (act) {
        case FfnActivation::Silu: ops.swiglu(gate, up, out); return;
        case FfnActivation::GeluTanh: ops.geglu(gate, up, out); return;
        // alpha and limit as llama.cpp's build_moe_ffn hard-codes them for gpt-oss.
        case FfnActivation::SwigluOai: ops.swiglu_oai(gate, up, 1.702f, 7.0f, out); return;
    }
}

// The layer's trained SwiGLU limit from `limits` (HParams::swiglu_clamp_exp
// or _shexp), 0 when it has none (llama.cpp: a limit of at most 1e-6 is none).
float swiglu_limit(const std::vector<float>& limits, uint32_t layer) {
    const float l = layer < limits.size() ? limits[layer] : 0.0f;
    return l > 1e-6f ? l : 0.0f;
}

// out = min(silu(gate), limit) * clamp(up, -limit, limit), llama.cpp's
// SwiGLU with a trained limit (bailingmoe3); contiguous F32 views of equal size.
void limited_swiglu(const TensorView& gate, const TensorView& up, float limit, const TensorView& out) {
    const auto* g = static_cast<const float*>(gate.data);
    const auto* u = static_cast<const float*>(up.data);
    auto* y = static_cast<float*>(out.data);
    const int64_t n = gate.ne[0] * gate.ne[1] * gate.ne[2] * gate.ne[3];
    for (int64_t i = 0; i < n; ++i) {
        const float act = std::min(g[i] / (1.0f + std::exp(-g[i])), limit);
        y[i] = act * std::clamp(u[i], -limit, limit);
    }
}

// out = situ(gate, up) (HParams::situ_beta: kimi-k3's activation), on
// contiguous F32 views of equal size.
void situ(const HParams& hp, const TensorView& gate, const TensorView& up, const TensorView& out) {
    const auto* g = static_cast<const float*>(gate.data);
    const auto* u = static_cast<const float*>(up.data);
    auto* y = static_cast<float*>(out.data);
    const float b = hp.situ_beta, bl = hp.situ_linear_beta;
    const int64_t n = gate.ne[0] * gate.ne[1] * gate.ne[2] * gate.ne[3];
    for (int64_t i = 0; i < n; ++i) {
        const float a = b * std::tanh(g[i] / b) / (1.0f + std::exp(-g[i]));
        y[i] = a * (bl > 0.0f ? bl * std::tanh(u[i] / bl) : u[i]);
    }
}

// The feed-forward activation: situ when the model uses it, else `act`
// with the layer's SwiGLU limit when it has one.
void ffn_activation(ops::Ops& ops, const HParams& hp, FfnActivation act, float limit, const TensorView& gate,
                    const TensorView& up, const TensorView& out) {
    if (hp.situ_beta > 0.0f)
        situ(hp, gate, up, out);
    else if (limit > 0.0f && act == FfnActivation::Silu)
        limited_swiglu(gate, up, limit, out);
    else
        gated_activation(ops, act, gate, up, out);
}

// Copies rows [first, first + rows) of every column of a [total, n] buffer
// into a dense [rows, n] buffer: splits the output of a fused projection.
void split_rows(const float* src, int64_t total, int64_t first, int64_t rows, int64_t n, float* dst) {
    for (int64_t t = 0; t < n; ++t)
        std::memcpy(dst + t * rows, src + t * total + first, static_cast<size_t>(rows) * sizeof(float));
}

// Whether a part of a joined matrix (wq of wqkv, gate of gate_up) needs
// nothing after the joined product: no adapter (of the batch's set or of any
// row's set), scale or bias of its own.
// Its rows of the joined output can then be read in place.
bool plain_part(const Step& s, const Linear& lin) {
    return !lin.has_scale && lin.bias.empty() && (s.in.adapters == nullptr || s.in.adapters->terms(&lin).empty()) &&
           (s.in.lora_rows == nullptr || s.in.lora_rows->terms(&lin).empty());
}

// Rows [first, first + rows) of every column of a [total, n] buffer as a
// strided view of `inner`-long rows, [inner, rows / inner, n], without a copy.
TensorView part_view(std::vector<float>& buf, int64_t total, int64_t first, int64_t inner, int64_t rows, int64_t n) {
    TensorView v = TensorView::contiguous(ElementType::F32, buf.data() + first, {inner, rows / inner, n});
    v.nb[2] = static_cast<size_t>(total) * sizeof(float);
    v.nb[3] = v.nb[2] * static_cast<size_t>(n);
    return v;
}

}  // namespace

void finish_linear(Step& s, const Linear& lin, const TensorView& y) {
    if (lin.has_scale && !lin.bias_before_scale) s.ops.scale(y, lin.scale, y);
    if (!lin.bias.empty()) s.ops.add(y, vec_view(lin.bias), y);
    if (lin.has_scale && lin.bias_before_scale) s.ops.scale(y, lin.scale, y);
}

namespace {

// add_lora for a micro-batch whose rows are under different sets
// (ForwardInput::lora_rows): each term's delta is computed over the rows
// that apply it only (their columns of x gathered when they are not all of
// them), then added to each of those rows at the row's scale. Each row gets
// what add_lora with its own set computes: s · B (A x), rounded as there
// (the product scaled, then added).
void add_lora_rows(Step& s, const Linear& lin, const TensorView& x, const TensorView& y) {
    const std::span<const LoraRows::Term> terms = s.in.lora_rows->terms(&lin);
    if (terms.empty()) return;
    if (s.in.lora_applied) s.in.lora_applied->push_back(&lin);
    // Scratch of this thread (a forward pass runs on one thread; the ops spread each product).
    thread_local std::vector<int64_t> rows;
    thread_local std::vector<float> row_scales, gathered, low, delta;
    const int64_t n_in = x.ne[0], n_out = y.ne[0], n = y.ne[1];
    for (const LoraRows::Term& t : terms) {
        rows.clear();
        row_scales.clear();
        for (int64_t r = 0; r < n; ++r) {
            const float scale = t.scales[s.in.lora_row_set[r]];
            if (scale == 0.0f) continue;  // the row's set does not apply this pair
            rows.push_back(r);
            row_scales.push_back(scale);
        }
        const auto m = static_cast<int64_t>(rows.size());
        if (m == 0) continue;
        TensorView xs = x;
        if (m < n) {
            gathered.resize(static_cast<size_t>(n_in * m));
            for (int64_t j = 0; j < m; ++j)
                std::memcpy(gathered.data() + j * n_in, x.row_f32(rows[j]), static_cast<size_t>(n_in) * sizeof(float));
            xs = view(gathered, n_in, m);
        }
        low.resize(static_cast<size_t>(t.rank * m));
        delta.resize(static_cast<size_t>(n_out * m));
        const TensorView l = view(low, t.rank, m), d = view(delta, n_out, m);
        s.ops.matmul(t.a, xs, l);
        s.ops.matmul(t.b, l, d);
        for (int64_t j = 0; j < m; ++j) {
            float* dj = delta.data() + j * n_out;
            const float scale = row_scales[static_cast<size_t>(j)];
            for (int64_t o = 0; o < n_out; ++o) dj[o] *= scale;
        }
        for (int64_t j = 0; j < m; ++j) {
            float* yr = y.row_f32(rows[static_cast<size_t>(j)]);
            const float* dj = delta.data() + j * n_out;
            for (int64_t o = 0; o < n_out; ++o) yr[o] += dj[o];
        }
    }
}

}  // namespace

void add_lora(Step& s, const Linear& lin, const TensorView& x, const TensorView& y) {
    if (s.in.lora_rows != nullptr) {
        add_lora_rows(s, lin, x, y);
        return;
    }
    if (s.in.adapters == nullptr) return;
    const std::span<const LoraSet::Term> terms = s.in.adapters->terms(&lin);
    if (terms.empty()) return;
    if (s.in.lora_applied) s.in.lora_applied->push_back(&lin);
    // Scratch of this thread (a forward pass runs on one thread; the ops spread each product).
    thread_local std::vector<float> low, delta;
    const int64_t n_out = y.ne[0], n = y.ne[1];
    for (const LoraSet::Term& t : terms) {
        low.resize(static_cast<size_t>(t.rank * n));
        delta.resize(static_cast<size_t>(n_out * n));
        const TensorView l = view(low, t.rank, n), d = view(delta, n_out, n);
        s.ops.matmul(t.a, x, l);
        s.ops.matmul(t.b, l, d);
        s.ops.scale(d, t.scale, d);
        s.ops.add(y, d, y);
    }
}

void linear(Step& s, const Linear& lin, const TensorView& x, const TensorView& y) {
    s.ops.matmul(lin.w, x, y);
    add_lora(s, lin, x, y);
    finish_linear(s, lin, y);
}

const int32_t* rope_positions(Step& s) {
    if (s.hp.rope_order != RopeOrder::MRope) return s.in.positions;
    if (s.in.rope_positions != nullptr) return s.in.rope_positions;
    // Text tokens under M-RoPE: t, h and w are the position, extra is 0
    // (llama.cpp turns 1-D positions into these for token input).
    std::vector<int32_t>& p = s.ws.rope_positions;
    p.assign(static_cast<size_t>(4 * s.n), 0);
    for (int64_t k = 0; k < 3; ++k) std::copy(s.in.positions, s.in.positions + s.n, p.begin() + k * s.n);
    return p.data();
}

bool embed(Step& s, bool scale) {
    const int64_t n_embd = s.hp.n_embd;
    const TensorView x = view(s.ws.x, n_embd, s.n);
    if (!s.first_stage()) {
        if (s.in.stream_in == nullptr) throw Error("forward: a later pipeline stage needs the previous stage's stream");
        std::memcpy(s.ws.x.data(), s.in.stream_in, static_cast<size_t>(n_embd * s.n) * sizeof(float));
        return false;
    }
    if (s.in.embd != nullptr) {
        std::memcpy(s.ws.x.data(), s.in.embd, static_cast<size_t>(n_embd * s.n) * sizeof(float));
    } else {
        for (int64_t t = 0; t < s.n; ++t)
            if (s.in.tokens[t] < 0 || static_cast<uint32_t>(s.in.tokens[t]) >= s.hp.n_vocab)
                throw Error("token id " + std::to_string(s.in.tokens[t]) + " is outside the vocabulary of " +
                            std::to_string(s.hp.n_vocab));
        s.ops.get_rows(s.w.token_embd, s.in.tokens, s.n, x);
    }
    if (scale) s.ops.scale(x, std::sqrt(static_cast<float>(n_embd)), x);
    if (s.hp.embedding_scale != 0.0f) s.ops.scale(x, s.hp.embedding_scale, x);
    return true;
}

void attention_block(Step& s, uint32_t layer, const AttentionOptions& o) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n;
    const int64_t nq = hp.n_embd_q(), nk = hp.n_embd_k(), nv = hp.n_embd_v();

    const TensorView x = view(ws.x, hp.n_embd, n);
    const TensorView h = o.pre_norm ? view(ws.h, hp.n_embd, n) : x;
    if (o.pre_norm) s.ops.rms_norm(x, lw.attn_norm.data(), hp.norm_rms_eps, h);

    const TensorView q = view(ws.q, nq, n), k = view(ws.k, nk, n), v = view(ws.v, nv, n);
    // Heads as rows: [head_dim, heads, n].
    const TensorView qh = TensorView::contiguous(ElementType::F32, ws.q.data(), {hp.head_dim, hp.n_head, n});
    const TensorView kh = TensorView::contiguous(ElementType::F32, ws.k.data(), {hp.head_dim, hp.n_head_kv, n});
    const TensorView vh = TensorView::contiguous(ElementType::F32, ws.v.data(), {hp.head_dim_v, hp.n_head_kv, n});
    // Where the first op on Q and K reads them: qh and kh, or, after a joined
    // product whose parts need nothing more, their rows of ws.qkv in place;
    // the q/k norm or the rope then writes qh and kh, which saves copying Q
    // and K out of the joined output (the same values either way).
    TensorView q_in = qh, k_in = kh;
    const int64_t total = nq + nk + nv;
    const bool qk_in_place = lw.wqkv.present() && plain_part(s, lw.wq) && plain_part(s, lw.wk) &&
                             plain_part(s, lw.wv) && (o.qk_norm || hp.uses_rope(layer));
    if (qk_in_place) {
        linear(s, lw.wqkv, h, view(ws.qkv, total, n));
        q_in = part_view(ws.qkv, total, 0, hp.head_dim, nq, n);
        k_in = part_view(ws.qkv, total, nq, hp.head_dim, nk, n);
    } else if (lw.wqkv.present()) {  // the file's fused matrix, or [q; k; v] joined at load
        linear(s, lw.wqkv, h, view(ws.qkv, total, n));
        split_rows(ws.qkv.data(), total, 0, nq, n, ws.q.data());
        split_rows(ws.qkv.data(), total, nq, nk, n, ws.k.data());
        split_rows(ws.qkv.data(), total, nq + nk, nv, n, ws.v.data());
        // A joined matrix leaves each part's own adapters, scale and bias to apply.
        add_lora(s, lw.wq, h, q);
        add_lora(s, lw.wk, h, k);
        add_lora(s, lw.wv, h, v);
        finish_linear(s, lw.wq, q);
        finish_linear(s, lw.wk, k);
        finish_linear(s, lw.wv, v);
    } else {
        linear(s, lw.wq, h, q);
        linear(s, lw.wk, h, k);
        linear(s, lw.wv, h, v);
    }
    // Copies Q and K into ws.q and ws.k if no op has written them there yet.
    const auto settle_qk = [&] {
        if (q_in.data == qh.data) return;
        split_rows(ws.qkv.data(), total, 0, nq, n, ws.q.data());
        split_rows(ws.qkv.data(), total, nq, nk, n, ws.k.data());
        q_in = qh;
        k_in = kh;
    };
    if (o.qk_norm) {
        if (static_cast<int64_t>(lw.q_norm.size()) == nq && nq != hp.head_dim) {
            // olmoe: over the whole Q and K vectors, before the split into heads.
            settle_qk();
            s.ops.rms_norm(q, lw.q_norm.data(), hp.norm_rms_eps, q);
            s.ops.rms_norm(k, lw.k_norm.data(), hp.norm_rms_eps, k);
        } else {
            s.ops.rms_norm(q_in, lw.q_norm.data(), hp.norm_rms_eps, qh);
            s.ops.rms_norm(k_in, lw.k_norm.data(), hp.norm_rms_eps, kh);
            q_in = qh;
            k_in = kh;
        }
    }
    if (hp.uses_rope(layer)) {
        const ops::RopeParams rope = s.model.rope_params(layer, s.in.long_rope);
        const int32_t* positions = rope_positions(s);
        s.ops.rope(q_in, positions, rope, qh);
        s.ops.rope(k_in, positions, rope, kh);
        q_in = qh;
        k_in = kh;
    }
    settle_qk();

    ops::AttentionParams ap;
    ap.scale = hp.attention_scale;
    ap.causal = true;
    ap.window = hp.is_swa(layer) ? hp.n_swa : 0;
    ap.softcap = hp.attn_softcap;
    ap.sinks = lw.attn_sinks.empty() ? nullptr : lw.attn_sinks.data();
    ap.positions = s.in.positions;
    const TensorView attn = TensorView::contiguous(ElementType::F32, ws.attn.data(), {hp.head_dim_v, hp.n_head, n});
    // V goes only into the cache, which takes each token's heads where the
    // joined product left them.
    const TensorView v_in = qk_in_place ? part_view(ws.qkv, total, nq + nk, hp.head_dim_v, nv, n) : vh;
    s.memory.attend(layer, qh, kh, v_in, ap, attn);

    const int64_t n_attn = static_cast<int64_t>(hp.n_head) * hp.head_dim_v;
    if (o.output_gate) {
        // ws.q is free once attended, and as wide (the gate is [n_head * head_dim]; the
        // architecture checks head_dim_v == head_dim); h still holds the block's input.
        const TensorView g = view(ws.q, n_attn, n);
        linear(s, lw.attn_gate, h, g);
        for (int64_t i = 0; i < n_attn * n; ++i) ws.q[static_cast<size_t>(i)] = 1.0f / (1.0f + std::exp(-ws.q[static_cast<size_t>(i)]));
        s.ops.mul(view(ws.attn, n_attn, n), g, view(ws.attn, n_attn, n));
    }
    const TensorView out = view(ws.o, hp.n_embd, n);
    linear(s, lw.wo, view(ws.attn, n_attn, n), out);
    const float post_eps = hp.post_norm_eps != 0.0f ? hp.post_norm_eps : hp.norm_rms_eps;
    if (o.post_norm) s.ops.rms_norm(out, lw.post_attn_norm.data(), post_eps, out);
    if (hp.residual_scale != 0.0f) s.ops.scale(out, hp.residual_scale, out);
    s.ops.add(x, out, x);
}

namespace {

// A [rows, n] view, dense or a part_view [rows, 1, n] of a joined output
// (columns a fixed stride apart), as the 2-D [rows, n] view matmul takes.
TensorView as_matrix(const TensorView& v, int64_t rows, int64_t n) {
    const size_t column_stride = v.ne[1] == 1 && v.ne[2] == n ? v.nb[2] : v.nb[1];
    TensorView m = TensorView::contiguous(ElementType::F32, v.data, {rows, n});
    m.nb[1] = column_stride;
    m.nb[2] = m.nb[3] = column_stride * static_cast<size_t>(n);
    return m;
}

}  // namespace

void ffn_block(Step& s, uint32_t layer, const FfnOptions& o) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, n_ff = hp.n_ff;

    const TensorView x = view(ws.x, hp.n_embd, n);
    const TensorView h = o.pre_norm ? view(ws.h, hp.n_embd, n) : x;
    if (o.pre_norm) s.ops.rms_norm(x, lw.ffn_norm.data(), hp.norm_rms_eps, h);

    const TensorView gate = view(ws.gate, n_ff, n), up = view(ws.up, n_ff, n);
    // A joined [gate; up] whose parts need nothing more and a plain gated
    // activation: the activation reads both halves of the joined output in
    // place and writes ws.gate (saves copying both out, the same values).
    const bool plain_activation = hp.situ_beta <= 0.0f &&
                                  !(swiglu_limit(hp.swiglu_clamp_shexp, layer) > 0.0f && o.activation == FfnActivation::Silu);
    TensorView act_gate = gate, act_up = up, act_out = gate;
    if (lw.gate_up.present() && plain_part(s, lw.gate) && plain_part(s, lw.up) && plain_activation) {
        linear(s, lw.gate_up, h, view(ws.qkv, 2 * n_ff, n));
        act_gate = part_view(ws.qkv, 2 * n_ff, 0, n_ff, n_ff, n);
        act_up = part_view(ws.qkv, 2 * n_ff, n_ff, n_ff, n_ff, n);
        act_out = TensorView::contiguous(ElementType::F32, ws.gate.data(), {n_ff, 1, n});
    } else if (lw.gate_up.present() || !lw.gate.present()) {
        // One product gives [gate; up] per token, gate rows first: the two
        // joined at load, or the file's fused ffn_up (phi3).
        linear(s, lw.gate_up.present() ? lw.gate_up : lw.up, h, view(ws.qkv, 2 * n_ff, n));
        split_rows(ws.qkv.data(), 2 * n_ff, 0, n_ff, n, ws.gate.data());
        split_rows(ws.qkv.data(), 2 * n_ff, n_ff, n_ff, n, ws.up.data());
        if (lw.gate_up.present()) {
            add_lora(s, lw.gate, h, gate);
            add_lora(s, lw.up, h, up);
            finish_linear(s, lw.gate, gate);
            finish_linear(s, lw.up, up);
        }
    } else {
        linear(s, lw.gate, h, gate);
        linear(s, lw.up, h, up);
    }
    const TensorView out = view(ws.o, hp.n_embd, n);
    if (o.activation == FfnActivation::Silu && plain_activation && plain_part(s, lw.down)) {
        // A plain SwiGLU straight into a plain down projection (no adapter,
        // per-row adapters included, scale or bias): the product computes the
        // activation row by row as it quantises it (the same bits), so the
        // [n_ff, n] activation is never written and read back.
        s.ops.matmul_swiglu(lw.down.w, as_matrix(act_gate, n_ff, n), as_matrix(act_up, n_ff, n), out);
    } else {
        ffn_activation(s.ops, hp, o.activation, swiglu_limit(hp.swiglu_clamp_shexp, layer), act_gate, act_up, act_out);
        linear(s, lw.down, gate, out);
    }
    if (o.post_norm)
        s.ops.rms_norm(out, lw.post_ffn_norm.data(), hp.post_norm_eps != 0.0f ? hp.post_norm_eps : hp.norm_rms_eps, out);
    if (hp.residual_scale != 0.0f) s.ops.scale(out, hp.residual_scale, out);
    s.ops.add(x, out, x);
}

namespace {

ops::MoeGating op_gating(ExpertGating g) {
    switch (g) {
        case ExpertGating::Softmax: return ops::MoeGating::Softmax;
        case ExpertGating::Sigmoid: return ops::MoeGating::Sigmoid;
        case ExpertGating::SoftmaxWeight: return ops::MoeGating::SoftmaxWeight;
    }
    return ops::MoeGating::Softmax;
}

// out[:, j, t] *= scale[ids[t * k + j]]: an expert's `.scale` on its outputs
// (rows values per pair, `stride` floats apart; 0: rows).
void scale_experts(const std::vector<float>& scale, const int32_t* ids, int64_t rows, int64_t k, int64_t n,
                   float* out, int64_t stride = 0) {
    if (scale.empty()) return;
    for (int64_t i = 0; i < k * n; ++i) {
        const float sc = scale[static_cast<size_t>(ids[i])];
        float* y = out + i * (stride ? stride : rows);
        for (int64_t r = 0; r < rows; ++r) y[r] *= sc;
    }
}

// out[:, j, t] += bias[:, ids[t * k + j]] (ggml_add_id): an expert's own bias.
void add_expert_bias(const std::vector<float>& bias, const int32_t* ids, int64_t rows, int64_t k, int64_t n,
                     float* out) {
    if (bias.empty()) return;
    for (int64_t i = 0; i < k * n; ++i) {
        const float* b = bias.data() + static_cast<int64_t>(ids[i]) * rows;
        float* y = out + i * rows;
        for (int64_t r = 0; r < rows; ++r) y[r] += b[r];
    }
}

}  // namespace

void moe_ffn_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, E = hp.n_embd, F = hp.n_ff_exp, k = hp.n_expert_used;

    const TensorView x = view(ws.x, E, n);
    const TensorView h = view(ws.h, E, n);
    s.ops.rms_norm(x, lw.ffn_norm.data(), hp.norm_rms_eps, h);

    const TensorView router = view(ws.router, hp.n_expert, n);
    linear(s, lw.gate_inp, h, router);
    ops::MoeRouteParams rp;
    rp.n_used = k;
    rp.gating = op_gating(hp.expert_gating);
    rp.norm_weights = hp.expert_weights_norm;
    rp.weights_scale = hp.expert_weights_scale;
    rp.selection_bias = lw.exp_probs_b.empty() ? nullptr : lw.exp_probs_b.data();
    rp.group_count = hp.expert_group_count;
    rp.group_used = hp.expert_group_used;
    const int32_t* ids = ws.expert_ids.data();
    s.ops.moe_route(router, rp, ws.expert_ids.data(), view(ws.expert_weights, k, n));

    // The experts' input: h, or its latent (kimi-k3: the experts run at
    // n_expert_latent, their sum goes back through latent_up below).
    const bool latent = lw.latent_down.present();
    const int64_t Ex = latent ? int64_t{hp.n_expert_latent} : E;
    if (latent) linear(s, lw.latent_down, h, view(ws.moe_latent, Ex, n));
    const TensorView hx =
        TensorView::contiguous(ElementType::F32, latent ? ws.moe_latent.data() : ws.h.data(), {Ex, 1, n});
    const TensorView gate = TensorView::contiguous(ElementType::F32, ws.expert_gate.data(), {F, k, n});
    const TensorView up = TensorView::contiguous(ElementType::F32, ws.expert_up.data(), {F, k, n});
    if (lw.gate_up_exps.present()) {
        // One product per token for both (the file's fused [gate; up], or
        // joined at load): the fused tensor's own scale and bias on the whole
        // product, then split so that the halves' scales, biases and the
        // activation apply as to separate products (the copy is small beside
        // the product).
        const TensorView gate_up = TensorView::contiguous(ElementType::F32, ws.expert_gate_up.data(), {2 * F, k, n});
        s.ops.matmul_id(lw.gate_up_exps.w, hx, ids, k, gate_up);
        scale_experts(lw.gate_up_exps.scale, ids, 2 * F, k, n, ws.expert_gate_up.data());
        add_expert_bias(lw.gate_up_exps.bias, ids, 2 * F, k, n, ws.expert_gate_up.data());
        split_rows(ws.expert_gate_up.data(), 2 * F, 0, F, k * n, ws.expert_gate.data());
        split_rows(ws.expert_gate_up.data(), 2 * F, F, F, k * n, ws.expert_up.data());
    } else if (lw.gate_exps.present()) {
        s.ops.matmul_id(lw.up_exps.w, hx, ids, k, up);
        s.ops.matmul_id(lw.gate_exps.w, hx, ids, k, gate);
    } else {
        s.ops.matmul_id(lw.up_exps.w, hx, ids, k, up);
    }
    scale_experts(lw.up_exps.scale, ids, F, k, n, ws.expert_up.data());
    add_expert_bias(lw.up_exps.bias, ids, F, k, n, ws.expert_up.data());
    if (lw.gate_exps.present() || lw.gate_up_exps.present()) {
        scale_experts(lw.gate_exps.scale, ids, F, k, n, ws.expert_gate.data());
        add_expert_bias(lw.gate_exps.bias, ids, F, k, n, ws.expert_gate.data());
        ffn_activation(s.ops, hp, hp.expert_activation, swiglu_limit(hp.swiglu_clamp_exp, layer), gate, up, gate);
    } else {
        s.ops.silu(up, gate);
    }
    const TensorView down = TensorView::contiguous(ElementType::F32, ws.expert_out.data(), {Ex, k, n});
    s.ops.matmul_id(lw.down_exps.w, gate, ids, k, down);
    scale_experts(lw.down_exps.scale, ids, Ex, k, n, ws.expert_out.data());
    add_expert_bias(lw.down_exps.bias, ids, Ex, k, n, ws.expert_out.data());

    // out[:, t] = sum_j w[j, t] down[:, j, t], summed in rank order as
    // llama.cpp does, then added to the residual stream.
    for (int64_t t = 0; t < n; ++t) {
        float* ot = ws.o.data() + t * Ex;
        for (int64_t j = 0; j < k; ++j) {
            const float wj = ws.expert_weights[static_cast<size_t>(t * k + j)];
            const float* y = ws.expert_out.data() + (t * k + j) * Ex;
            for (int64_t r = 0; r < Ex; ++r) ot[r] = j == 0 ? wj * y[r] : ot[r] + wj * y[r];
        }
    }
    if (latent) {  // the latent sum, normed when the file has the norm, back to n_embd
        const TensorView sum = view(ws.o, Ex, n);
        if (!lw.latent_norm.empty()) s.ops.rms_norm(sum, lw.latent_norm.data(), hp.norm_rms_eps, sum);
        linear(s, lw.latent_up, sum, view(ws.expert_out, E, n));
        std::memcpy(ws.o.data(), ws.expert_out.data(), static_cast<size_t>(E * n) * sizeof(float));
    }
    // The shared expert: out += [sigmoid(gate_inp_shexp · h)] * down_s(silu(gate_s h) * up_s h).
    if (lw.up_shexp.present()) {
        const int64_t Fs = hp.n_ff_shexp;
        const TensorView sg = view(ws.gate, Fs, n), su = view(ws.up, Fs, n);
        linear(s, lw.gate_shexp, h, sg);
        linear(s, lw.up_shexp, h, su);
        ffn_activation(s.ops, hp, FfnActivation::Silu, swiglu_limit(hp.swiglu_clamp_shexp, layer), sg, su, sg);
        const TensorView shared = view(ws.expert_out, E, n);  // free again: the routed sum is in ws.o
        linear(s, lw.down_shexp, sg, shared);
        if (lw.gate_inp_shexp.present()) {
            const TensorView z = view(ws.router, 1, n);
            linear(s, lw.gate_inp_shexp, h, z);
            for (int64_t t = 0; t < n; ++t) {
                const float g = 1.0f / (1.0f + std::exp(-ws.router[static_cast<size_t>(t)]));
                float* y = ws.expert_out.data() + t * E;
                for (int64_t r = 0; r < E; ++r) y[r] *= g;
            }
        }
        s.ops.add(view(ws.o, E, n), shared, view(ws.o, E, n));
    }
    if (hp.residual_scale != 0.0f) s.ops.scale(view(ws.o, E, n), hp.residual_scale, view(ws.o, E, n));
    s.ops.add(x, view(ws.o, E, n), x);
}

void capture(Step& s, uint32_t layer) {
    const ForwardInput& in = s.in;
    if (in.features == nullptr) return;
    // A pipeline stage captures only the layers it runs: the stream after its
    // last layer is the next stage's layer input (captured there), and "after
    // the last layer" (n_layer) belongs to the last stage alone.
    if (layer < s.layer_begin || layer > s.layer_end || (layer == s.layer_end && !s.last_stage())) return;
    const int64_t n_embd = s.hp.n_embd;
    for (size_t c = 0; c < in.n_capture; ++c) {
        if (in.capture_layers[c] != layer) continue;
        for (int64_t i = 0; i < in.n_outputs; ++i) {
            float* dst = in.features + (static_cast<size_t>(i) * in.n_capture + c) * static_cast<size_t>(n_embd);
            std::memcpy(dst, s.ws.x.data() + static_cast<int64_t>(in.output_rows[i]) * n_embd,
                        static_cast<size_t>(n_embd) * sizeof(float));
        }
    }
}

void output_head(Step& s, float* logits, float* hidden) {
    const HParams& hp = s.hp;
    if (!s.last_stage()) {
        if (s.in.stream_out == nullptr) throw Error("forward: a pipeline stage before the last needs somewhere to leave its stream");
        std::memcpy(s.in.stream_out, s.ws.x.data(), static_cast<size_t>(int64_t{hp.n_embd} * s.n) * sizeof(float));
        return;
    }
    const int64_t n_out = s.in.n_outputs;
    if (n_out == 0) return;
    const int64_t n_embd = hp.n_embd;
    // Only the rows asked for go through the (large) output projection.
    float* rows = s.ws.out_rows.data();
    for (int64_t i = 0; i < n_out; ++i) {
        const int32_t r = s.in.output_rows[i];
        if (r < 0 || r >= s.n) throw Error("output row " + std::to_string(r) + " is outside the micro-batch");
        std::memcpy(rows + i * n_embd, s.ws.x.data() + static_cast<int64_t>(r) * n_embd,
                    static_cast<size_t>(n_embd) * sizeof(float));
    }
    const TensorView normed = TensorView::contiguous(ElementType::F32, rows, {n_embd, n_out});
    s.ops.rms_norm(normed, s.w.output_norm.data(), hp.norm_rms_eps, normed);
    if (hidden != nullptr) std::memcpy(hidden, rows, static_cast<size_t>(n_embd * n_out) * sizeof(float));
    if (logits == nullptr) return;
    const TensorView out = TensorView::contiguous(ElementType::F32, logits, {int64_t{hp.n_vocab}, n_out});
    linear(s, s.w.output, normed, out);
    if (hp.logit_multiplier != 1.0f) s.ops.scale(out, hp.logit_multiplier, out);
    if (hp.final_softcap > 0.0f) {
        const float cap = hp.final_softcap;
        const int64_t total = n_out * hp.n_vocab;
        for (int64_t i = 0; i < total; ++i) logits[i] = std::tanh(logits[i] / cap) * cap;
    }
}

}  // namespace cria::model::blocks

namespace cria::model::blocks {

void dense_transformer(Step& s, float* logits, float* hidden, bool scale_embeddings, const AttentionOptions& attention,
                       const FfnOptions& ffn) {
    embed(s, scale_embeddings);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        capture(s, l);
        if (!s.hp.is_recurrent(l))
            attention_block(s, l, attention);
        else if (s.hp.ssm_groups > 0)  // hybrids: a state-space mixer instead of attention
            mamba2_block(s, l);
        else
            mamba_block(s, l);
        if (s.hp.is_moe(l))
            moe_ffn_block(s, l);
        else
            ffn_block(s, l, ffn);
    }
    capture(s, s.hp.n_layer);
    output_head(s, logits, hidden);
}

}  // namespace cria::model::blocks
