// gemma2 and gemma3 in float64, top to bottom: embeddings times
// sqrt(n_embd); per layer an RMSNorm before and after attention and the
// feed-forward block (post norms); GeGLU; a sliding window on the layers the
// hyperparameters mark (with their own rope base); soft caps on the scores
// and the logits when set (gemma2); an RMSNorm over each Q and K head when
// the table loaded one (gemma3).

#include "model/reference/families.h"

namespace cria::model::reference {

Logits gemma(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/true);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];

        // Attention: x += post_norm(Wo · attention(rope(q), rope(k), v)) of rms_norm(x).
        const Rows attn = self_attention(in, l, x);  // windowed and soft-capped as hp says
        const Linear wo(lw.wo);
        for (size_t t = 0; t < n; ++t) add_to(x[t], rms_norm(wo(attn[t]), lw.post_attn_norm, eps));

        // Feed-forward (GeGLU): x += post_norm(down · (gelu(gate h) * up h)), h = rms_norm(x).
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(h);
            const Vec u = up(h);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = gelu_tanh(g[i]) * u[i];
            add_to(x[t], rms_norm(down(g), lw.post_ffn_norm, eps));
        }
    }
    return output_head(in, x);  // with the final soft cap when set
}

}  // namespace cria::model::reference
