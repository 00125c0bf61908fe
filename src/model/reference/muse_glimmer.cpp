// muse-glimmer in float64, top to bottom: embeddings RMS-normed without a
// weight; per layer the attention of rms_norm(x) (per-head Q/K norms, rope
// only on the sliding-window layers: hp.nope_layers), each output channel
// times sigmoid(attn_gate h), through attn_output and a post norm; then the
// SwiGLU block with its post norm. Post norms use hp.post_norm_eps (1e-8).
// Logits times logit_scale, then the final soft cap (output_head).

#include <cmath>

#include "model/reference/families.h"

namespace cria::model::reference {

Logits muse_glimmer(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const double post_eps = hp.post_norm_eps != 0.0f ? hp.post_norm_eps : hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);
    const std::vector<float> ones(hp.n_embd, 1.0f);
    for (Vec& row : x) row = rms_norm(row, ones, eps);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];

        // Attention: x += post_norm(Wo · (sigmoid(Wg h) * attention(...))), h = rms_norm(x).
        const Rows attn = self_attention(in, l, x);
        const Linear gate_proj(lw.attn_gate), wo(lw.wo);
        for (size_t t = 0; t < n; ++t) {
            const Vec g = gate_proj(rms_norm(x[t], lw.attn_norm, eps));
            Vec a = attn[t];
            for (size_t i = 0; i < a.size(); ++i) a[i] *= 1.0 / (1.0 + std::exp(-g[i]));
            add_to(x[t], rms_norm(wo(a), lw.post_attn_norm, post_eps));
        }

        // Feed-forward (SwiGLU): x += post_norm(down · (silu(gate f) * up f)), f = rms_norm(x).
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec f = rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(f);
            const Vec u = up(f);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = silu(g[i]) * u[i];
            add_to(x[t], rms_norm(down(g), lw.post_ffn_norm, post_eps));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
