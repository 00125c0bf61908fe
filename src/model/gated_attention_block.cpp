// The gated attention block of qwen3next and qwen35 (llama.cpp's
// build_layer_attn of those graphs): attn_q gives per head head_dim query
// values then head_dim gate values; Q and K get an RMSNorm per head and
// rope; the attention output is multiplied by sigmoid(gate) before
// attn_output. Biases are not applied (llama.cpp's graph adds none).

#include <cmath>
#include <cstring>

#include "model/blocks.h"

namespace cria::model::blocks {

void gated_attention_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, hd = hp.head_dim, nq = hp.n_embd_q();

    const ops::TensorView x = view(ws.x, hp.n_embd, n), h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, lw.attn_norm.data(), hp.norm_rms_eps, h);

    // [q; gate] per head into delta_qkv (the gates stay there until the end).
    linear(s, lw.wq, h, view(ws.delta_qkv, 2 * nq, n));
    for (int64_t t = 0; t < n; ++t)
        for (int64_t head = 0; head < hp.n_head; ++head)
            std::memcpy(&ws.q[static_cast<size_t>(t * nq + head * hd)],
                        &ws.delta_qkv[static_cast<size_t>(t * 2 * nq + head * 2 * hd)],
                        static_cast<size_t>(hd) * sizeof(float));
    linear(s, lw.wk, h, view(ws.k, hp.n_embd_k(), n));
    linear(s, lw.wv, h, view(ws.v, hp.n_embd_v(), n));

    const auto heads = [n](std::vector<float>& buf, int64_t width, int64_t count) {
        return ops::TensorView::contiguous(ElementType::F32, buf.data(), {width, count, n});
    };
    const ops::TensorView qh = heads(ws.q, hd, hp.n_head), kh = heads(ws.k, hd, hp.n_head_kv),
                          vh = heads(ws.v, hp.head_dim_v, hp.n_head_kv);
    s.ops.rms_norm(qh, lw.q_norm.data(), hp.norm_rms_eps, qh);
    s.ops.rms_norm(kh, lw.k_norm.data(), hp.norm_rms_eps, kh);
    const ops::RopeParams rope = s.model.rope_params(layer, s.in.long_rope);
    s.ops.rope(qh, s.in.positions, rope, qh);
    s.ops.rope(kh, s.in.positions, rope, kh);

    ops::AttentionParams ap;
    ap.scale = hp.attention_scale;
    ap.causal = true;
    ap.positions = s.in.positions;
    s.memory.attend(layer, qh, kh, vh, ap, heads(ws.attn, hp.head_dim_v, hp.n_head));

    // o *= sigmoid(gate), head by head.
    for (int64_t t = 0; t < n; ++t)
        for (int64_t head = 0; head < hp.n_head; ++head) {
            const float* g = &ws.delta_qkv[static_cast<size_t>(t * 2 * nq + head * 2 * hd + hd)];
            float* o = &ws.attn[static_cast<size_t>(t * nq + head * hd)];
            for (int64_t i = 0; i < hd; ++i) o[i] /= 1.0f + std::exp(-g[i]);
        }
    const ops::TensorView out = view(ws.o, hp.n_embd, n);
    linear(s, lw.wo, view(ws.attn, nq, n), out);
    s.ops.add(x, out, x);
}

}  // namespace cria::model::blocks
