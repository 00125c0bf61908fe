// minimax-01 in float64: lightning-attention layers (the recurrence M <-
// gamma M + k v^T, o = M^T q per head, token by token from a zero state)
// and softmax attention layers, each block's residual alpha times its own
// normed input, a mixture of experts after each mixer.

#include <cmath>

#include "model/lightning_block.h"
#include "model/reference/families.h"

namespace cria::model::reference {
namespace {

// The lightning mixer of one layer on the normed inputs u of every position
// (model/lightning_block.h): everything but the decay rates in float64.
Rows lightning(const Input& in, uint32_t layer, const Rows& u) {
    const HParams& hp = in.hp;
    const LayerWeights& lw = in.w.layers[layer];
    const uint64_t d = hp.head_dim, H = hp.n_head, width = d * H;
    const std::vector<float> rates = blocks::lightning_decay_rates(hp, layer);
    const Linear qkv_proj(lw.wqkv), gate_proj(lw.attn_gate), wo(lw.wo);
    std::vector<Vec> M(H, Vec(d * d, 0.0));  // per head: M[j * d + i], key i, value j
    Rows out;
    for (const Vec& ut : u) {
        Vec qkv = qkv_proj(ut);
        for (double& v : qkv) v = silu(v);
        Vec o(width);
        for (uint64_t h = 0; h < H; ++h) {
            const double gamma = std::exp(-static_cast<double>(rates[h]));
            const double* q = &qkv[h * 3 * d];
            const double* k = q + d;
            const double* v = k + d;
            for (uint64_t j = 0; j < d; ++j) {
                double acc = 0;
                for (uint64_t i = 0; i < d; ++i) {
                    double& m = M[h][j * d + i];
                    m = gamma * m + k[i] * v[j];
                    acc += m * q[i];
                }
                o[h * d + j] = acc;
            }
        }
        o = rms_norm(o, lw.post_attn_norm, hp.norm_rms_eps);  // over all heads together
        const Vec g = gate_proj(ut);
        for (uint64_t c = 0; c < width; ++c) o[c] *= 1.0 / (1.0 + std::exp(-g[c]));
        out.push_back(wo(o));
    }
    return out;
}

}  // namespace

Logits minimax_01(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps, alpha = hp.normed_input_residual;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];
        Rows u(n);
        for (size_t t = 0; t < n; ++t) u[t] = rms_norm(x[t], lw.attn_norm, eps);
        Rows mixed;
        if (hp.is_recurrent(l)) {
            mixed = lightning(in, l, u);
        } else {
            const Rows attn = self_attention(in, l, x);
            const Linear wo(lw.wo);
            for (size_t t = 0; t < n; ++t) mixed.push_back(wo(attn[t]));
        }
        const MoeFfn moe(hp, lw);
        for (size_t t = 0; t < n; ++t) {
            Vec h = mixed[t];
            for (size_t c = 0; c < h.size(); ++c) h[c] += alpha * u[t][c];
            const Vec v = rms_norm(h, lw.ffn_norm, eps);
            x[t] = moe(v);
            for (size_t c = 0; c < v.size(); ++c) x[t][c] += alpha * v[c];
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
