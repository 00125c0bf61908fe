// Multi-head latent attention (DeepSeek-V2/V3, llama.cpp's deepseek2 graph),
// in the two forms llama.cpp runs. Keys and values come from one compressed
// latent per token (n_lora_kv values) plus a small roped key part shared by
// every head. The absorbed form folds each head's key decompression into its
// query (q_nope · k_b) and its value decompression into its output (v_b), so
// attention runs over the latent itself: one KV head whose value is the
// first n_lora_kv values of its key, which is what the cache keeps (the
// MLA GGUFs). The plain form (files with the older attn_kv_b) decompresses
// per-head keys and values and runs ordinary multi-head attention. The two
// are the same function of the weights.

#include <cmath>
#include <cstring>
#include <vector>

#include "model/blocks.h"

namespace cria::model::blocks {

using ops::TensorView;

namespace {

// A [ne0, ne1, ne2] F32 view into a buffer with row strides given in floats
// (ne0 values from `first`): a slice of each row of a wider buffer.
TensorView strided(float* data, int64_t first, int64_t ne0, int64_t ne1, int64_t ne2, int64_t nb1, int64_t nb2) {
    TensorView v = TensorView::contiguous(ElementType::F32, data + first, {ne0, ne1, ne2});
    v.nb[1] = static_cast<size_t>(nb1) * sizeof(float);
    v.nb[2] = static_cast<size_t>(nb2) * sizeof(float);
    v.nb[3] = v.nb[2] * static_cast<size_t>(ne2);
    return v;
}

}  // namespace

void mla_attention_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, H = hp.n_head;
    const int64_t dqk = hp.head_dim_mla, dv = hp.head_dim_v_mla, rot = hp.n_rot, nope = dqk - rot;
    const int64_t r = hp.n_lora_kv;

    const TensorView x = view(ws.x, hp.n_embd, n);
    const TensorView h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, lw.attn_norm.data(), hp.norm_rms_eps, h);

    // Queries: [q_nope | q_pe] per head.
    const TensorView q = view(ws.mla_q, H * dqk, n);
    if (lw.wq.present()) {
        linear(s, lw.wq, h, q);
    } else {
        const TensorView qa = view(ws.mla_q_a, hp.n_lora_q, n);
        linear(s, lw.wq_a, h, qa);
        s.ops.rms_norm(qa, lw.q_a_norm.data(), hp.norm_rms_eps, qa);
        linear(s, lw.wq_b, qa, q);
    }
    // The latent and the shared key part: [c | k_pe] per token.
    const TensorView kv = view(ws.mla_kv, r + rot, n);
    linear(s, lw.wkv_a_mqa, h, kv);
    const TensorView c = strided(ws.mla_kv.data(), 0, r, n, 1, r + rot, (r + rot) * n);
    s.ops.rms_norm(c, lw.kv_a_norm.data(), hp.norm_rms_eps, c);

    const ops::RopeParams rope = s.model.rope_params(layer, s.in.long_rope);
    const TensorView q_pe = strided(ws.mla_q.data(), nope, rot, H, n, dqk, H * dqk);
    const TensorView k_pe = strided(ws.mla_kv.data(), r, rot, 1, n, r + rot, r + rot);
    const bool roped = hp.uses_rope(layer);
    if (roped) s.ops.rope(k_pe, s.in.positions, rope, k_pe);

    ops::AttentionParams ap;
    ap.scale = hp.attention_scale;
    ap.causal = true;
    ap.positions = s.in.positions;
    const TensorView heads_out = view(ws.mla_v, H * dv, n);  // concat of the heads' values, Wo's input

    if (hp.mla_absorbed) {
        // Q per head: [k_b_h^T q_nope_h (r values) | rope(q_pe_h)], width r + rot = hp.head_dim.
        // The per-head products run as one indexed product (the heads as the
        // "experts", token t's slot h using head h's matrix): each head's
        // matrix streamed once for the whole micro-batch, the threads split
        // over (head, rows), one call instead of one per head.
        const int64_t dk = r + rot;
        std::vector<int32_t>& head_ids = ws.mla_head_ids;
        head_ids.resize(static_cast<size_t>(H * n));
        for (int64_t i = 0; i < H * n; ++i) head_ids[static_cast<size_t>(i)] = static_cast<int32_t>(i % H);
        const TensorView q_nope = strided(ws.mla_q.data(), 0, nope, H, n, dqk, H * dqk);
        const TensorView q_abs = strided(ws.q.data(), 0, r, H, n, dk, H * dk);
        s.ops.matmul_id(lw.k_b, q_nope, head_ids.data(), H, q_abs);
        const TensorView q_rot = strided(ws.q.data(), r, rot, H, n, dk, H * dk);
        if (roped) {
            s.ops.rope(q_pe, s.in.positions, rope, q_rot);
        } else {
            for (int64_t t = 0; t < n; ++t)
                for (int64_t hd = 0; hd < H; ++hd)
                    std::memcpy(ws.q.data() + (t * H + hd) * dk + r, ws.mla_q.data() + (t * H + hd) * dqk + nope,
                                static_cast<size_t>(rot) * sizeof(float));
        }
        // One shared KV head: K = [c | k_pe], V = c (a view of K's first r values).
        const TensorView qh = TensorView::contiguous(ElementType::F32, ws.q.data(), {dk, H, n});
        const TensorView kh = TensorView::contiguous(ElementType::F32, ws.mla_kv.data(), {dk, 1, n});
        const TensorView vh = strided(ws.mla_kv.data(), 0, r, 1, n, dk, dk);
        const TensorView latent_out = TensorView::contiguous(ElementType::F32, ws.attn.data(), {r, H, n});
        s.memory.attend(layer, qh, kh, vh, ap, latent_out);
        // Each head's attended latent through its v_b (one indexed product again).
        s.ops.matmul_id(lw.v_b, latent_out, head_ids.data(), H,
                        TensorView::contiguous(ElementType::F32, ws.mla_v.data(), {dv, H, n}));
    } else {
        // Per head K = [k_nope_h | k_pe] and V = v_h, both from wkv_b c.
        const int64_t per = nope + dv;
        const TensorView kvb = view(ws.qkv, H * per, n);
        linear(s, lw.wkv_b, c, kvb);
        for (int64_t t = 0; t < n; ++t)
            for (int64_t hd = 0; hd < H; ++hd) {
                const float* src = ws.qkv.data() + t * H * per + hd * per;
                float* k = ws.k.data() + (t * H + hd) * dqk;
                std::memcpy(k, src, static_cast<size_t>(nope) * sizeof(float));
                std::memcpy(k + nope, ws.mla_kv.data() + t * (r + rot) + r, static_cast<size_t>(rot) * sizeof(float));
                std::memcpy(ws.v.data() + (t * H + hd) * dv, src + nope, static_cast<size_t>(dv) * sizeof(float));
            }
        if (roped) s.ops.rope(q_pe, s.in.positions, rope, q_pe);
        const TensorView qh = TensorView::contiguous(ElementType::F32, ws.mla_q.data(), {dqk, H, n});
        const TensorView kh = TensorView::contiguous(ElementType::F32, ws.k.data(), {dqk, H, n});
        const TensorView vh = TensorView::contiguous(ElementType::F32, ws.v.data(), {dv, H, n});
        s.memory.attend(layer, qh, kh, vh, ap, TensorView::contiguous(ElementType::F32, ws.mla_v.data(), {dv, H, n}));
    }

    if (lw.attn_gate.present()) {
        // sigmoid(attn_gate h) per head (the same gate on the head's dv
        // values) or per value channel.
        const int64_t rows = lw.attn_gate.w.ne[1], per = H * dv / rows;
        linear(s, lw.attn_gate, h, view(ws.mla_gate, rows, n));
        for (int64_t t = 0; t < n; ++t)
            for (int64_t i = 0; i < H * dv; ++i)
                ws.mla_v[static_cast<size_t>(t * H * dv + i)] *=
                    1.0f / (1.0f + std::exp(-ws.mla_gate[static_cast<size_t>(t * rows + i / per)]));
    }
    const TensorView out = view(ws.o, hp.n_embd, n);
    linear(s, lw.wo, heads_out, out);
    s.ops.add(x, out, x);
}

}  // namespace cria::model::blocks
