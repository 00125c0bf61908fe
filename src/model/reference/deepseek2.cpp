// deepseek2 in float64, top to bottom: multi-head latent attention
// (reference/mla.h, written as the plain multi-head attention it equals),
// leading dense layers, then experts with an ungated shared expert.

#include "model/reference/families.h"
#include "model/reference/mla.h"

namespace cria::model::reference {
Logits deepseek2(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];
        const Rows attn = latent_attention(in, l, x);
        const Linear wo(lw.wo);
        for (size_t t = 0; t < n; ++t) add_to(x[t], wo(attn[t]));

        if (hp.is_moe(l)) {  // the routed experts plus the shared expert (MoeFfn adds it)
            const MoeFfn moe(hp, lw);
            for (size_t t = 0; t < n; ++t) add_to(x[t], moe(rms_norm(x[t], lw.ffn_norm, eps)));
            continue;
        }
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(h);
            const Vec u = up(h);
            for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
            add_to(x[t], down(g));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
