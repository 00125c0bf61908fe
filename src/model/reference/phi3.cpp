// phi3 in float64, top to bottom: the llama block with Q, K and V usually in
// one attn_qkv matrix, gate and up in one ffn_up matrix ([gate; up], gate
// rows first), NeoX rope with LongRoPE's per-dimension divisors (the short
// set, or the long one for contexts beyond the original: Input::long_rope).
// llama.cpp reads phi3's sliding window but does not apply it; neither do we.

#include "model/reference/families.h"

namespace cria::model::reference {

Logits phi3(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];

        // Attention: x += Wo · attention(rope(q), rope(k), v) of rms_norm(x),
        // q, k and v split from attn_qkv (or from attn_q/k/v).
        const Rows attn = self_attention(in, l, x);
        const Linear wo(lw.wo);
        for (size_t t = 0; t < n; ++t) add_to(x[t], wo(attn[t]));

        // Feed-forward (SwiGLU): [gate; up] = ffn_up h, x += down · (silu(gate) * up).
        const Linear gate_up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec both = gate_up(rms_norm(x[t], lw.ffn_norm, eps));
            Vec g(hp.n_ff);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = silu(both[i]) * both[hp.n_ff + i];
            add_to(x[t], down(g));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
