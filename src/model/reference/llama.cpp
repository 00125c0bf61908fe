// The llama family in float64, top to bottom: llama, and the qwen2 / qwen3
// flavours. What differs between them is data, not code: the rope order and
// scale come from the hyperparameters, biases and `.scale` tensors are applied
// when the file has them (as the tensor table loaded them), and qwen3's QK
// norm when its table loaded attn_q_norm / attn_k_norm.

#include "model/reference/families.h"

namespace cria::model::reference {

Logits llama(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];

        // Attention: x += Wo · attention(rope(q), rope(k), v) of rms_norm(x).
        const Rows attn = self_attention(in, l, x);
        const Linear wo(lw.wo);
        for (size_t t = 0; t < n; ++t) add_to(x[t], wo(attn[t]));

        // With experts: x += the weighted sum of the routed experts (MoeFfn).
        if (hp.is_moe(l)) {
            const MoeFfn moe(hp, lw);
            for (size_t t = 0; t < n; ++t) add_to(x[t], moe(rms_norm(x[t], lw.ffn_norm, eps)));
            continue;
        }
        // Feed-forward (SwiGLU): x += down · (silu(gate h) * up h), h = rms_norm(x).
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(h);
            const Vec u = up(h);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = silu(g[i]) * u[i];
            add_to(x[t], down(g));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
