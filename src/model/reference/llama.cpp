// The llama family in float64, top to bottom: llama, and the qwen2 / qwen3 /
// smollm3 / seed_oss / mistral3 / granite / exaone4 flavours. What differs
// between them is data, not code: the rope order, scale and the layers
// without rope come from the hyperparameters, biases and `.scale` tensors are
// applied when the file has them (as the tensor table loaded them), qwen3's QK
// norm when its table loaded attn_q_norm / attn_k_norm, the post norms when it
// loaded post_attention_norm / post_ffw_norm and the input norms only when it
// loaded attn_norm / ffn_norm (exaone4 has post norms only); granite's
// embedding, residual and logit scales when the hyperparameters set them;
// the hybrids (jamba, granitehybrid), whose recurrent layers have a
// state-space mixer instead of attention, and falcon-h1, whose layers have
// both, side by side on the same input.

#include "model/reference/families.h"
#include "model/reference/ssm.h"

namespace cria::model::reference {
namespace {

// What a block adds to the residual stream: its output, RMS-normed when the
// table loaded a post norm, times the residual scale when set (granite).
Vec block_output(const HParams& hp, Vec y, const std::vector<float>& post_norm) {
    if (!post_norm.empty()) y = rms_norm(y, post_norm, hp.norm_rms_eps);
    if (hp.residual_scale != 0.0f)
        for (double& v : y) v *= hp.residual_scale;
    return y;
}

}  // namespace

Logits llama(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];

        // Both read the same x: falcon-h1 has both, side by side.
        Rows mixed, attended;
        if (hp.is_recurrent(l)) {
            // Hybrids: the state-space mixer of rms_norm(x) (reference/ssm.h).
            Rows h(n);
            for (size_t t = 0; t < n; ++t) h[t] = rms_norm(x[t], lw.attn_norm, eps);
            mixed = hp.ssm_groups > 0 ? mamba2_mixer(in, l, h) : mamba_mixer(in, l, h);
        }
        if (hp.has_attention(l)) {
            // Attention: Wo · attention(rope(q), rope(k), v) of rms_norm(x).
            const Rows attn = self_attention(in, l, x);
            const Linear wo(lw.wo);
            for (size_t t = 0; t < n; ++t) attended.push_back(wo(attn[t]));
        }
        for (size_t t = 0; t < n; ++t) {
            if (!attended.empty()) add_to(x[t], block_output(hp, attended[t], lw.post_attn_norm));
            if (!mixed.empty()) add_to(x[t], block_output(hp, mixed[t], lw.post_attn_norm));
        }

        // With experts: x += the weighted sum of the routed experts (MoeFfn), times
        // the residual scale when set (granite).
        if (hp.is_moe(l)) {
            const MoeFfn moe(hp, lw);
            for (size_t t = 0; t < n; ++t) add_to(x[t], block_output(hp, moe(rms_norm(x[t], lw.ffn_norm, eps)), {}));
            continue;
        }
        // Feed-forward (SwiGLU): x += down · (silu(gate h) * up h), h = rms_norm(x).
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = lw.ffn_norm.empty() ? x[t] : rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(h);
            const Vec u = up(h);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = silu(g[i]) * u[i];
            add_to(x[t], block_output(hp, down(g), lw.post_ffn_norm));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
