// qwen3next, qwen35 and qwen35moe in float64, top to bottom: gated delta-net
// layers and gated attention layers, each followed by a SwiGLU feed-forward
// block or a mixture of experts with a gated shared expert (MoeFfn). The
// delta net is the recurrence itself, token after token (the definition the
// fast path's chunked form is an exact reformulation of).

#include <cmath>

#include "model/reference/families.h"

namespace cria::model::reference {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }  // ggml's threshold

// x / max(|x|, eps) (ggml_l2_norm) over each head of width d.
void l2_norm_heads(Vec& x, uint32_t d, double eps) {
    for (size_t first = 0; first < x.size(); first += d) {
        double sum = 0;
        for (uint32_t i = 0; i < d; ++i) sum += x[first + i] * x[first + i];
        const double norm = std::max(std::sqrt(sum), eps);
        for (uint32_t i = 0; i < d; ++i) x[first + i] /= norm;
    }
}

// One gated delta-net layer over every position (h: the normed inputs).
Rows delta_net_layer(const HParams& hp, const DeltaNetWeights& dw, const Rows& h) {
    const HParams::DeltaNet& dn = hp.delta_net;
    const uint32_t d = dn.head_dim, Hk = dn.n_k_heads, Hv = dn.n_v_heads, K = dn.conv_kernel, C = dn.n_conv();
    const uint32_t r = Hv / Hk;
    const double eps = hp.norm_rms_eps;
    const Linear qkv_proj(dw.qkv), z_proj(dw.z), out_proj(dw.out);
    const bool split_beta_alpha = dw.beta.present();
    const Linear ba_proj(split_beta_alpha ? dw.beta : dw.ba), alpha_proj(split_beta_alpha ? dw.alpha : dw.ba);

    Rows window;                                 // the convolution's inputs, the last K-1 kept: zeros at first
    for (uint32_t i = 0; i + 1 < K; ++i) window.push_back(Vec(C, 0.0));
    std::vector<Vec> M(Hv, Vec(size_t{d} * d, 0.0));  // per value head, M[j * d + i]: key i, value j
    Rows out;
    for (const Vec& x : h) {
        window.push_back(qkv_proj(x));
        const Vec z = z_proj(x);
        Vec beta(Hv), alpha(Hv);
        if (split_beta_alpha) {  // qwen35: flat value-head order
            beta = ba_proj(x);
            alpha = alpha_proj(x);
        } else {  // qwen3next: per key head, r beta logits then r alpha logits
            const Vec ba = ba_proj(x);
            for (uint32_t j = 0; j < Hk; ++j)
                for (uint32_t i = 0; i < r; ++i) {
                    beta[j * r + i] = ba[j * 2 * r + i];
                    alpha[j * r + i] = ba[j * 2 * r + r + i];
                }
        }
        // Causal convolution over [q; k; v], then SiLU.
        Vec c(C, 0.0);
        for (uint32_t ch = 0; ch < C; ++ch) {
            double acc = 0;
            for (uint32_t i = 0; i < K; ++i) acc += dw.conv[size_t{ch} * K + i] * window[window.size() - K + i][ch];
            c[ch] = silu(acc);
        }
        window.erase(window.begin());
        Vec q = slice(c, 0, dn.n_key()), k = slice(c, dn.n_key(), dn.n_key());
        const Vec v = slice(c, 2 * dn.n_key(), dn.n_value());
        l2_norm_heads(q, d, eps);
        l2_norm_heads(k, d, eps);

        Vec o(dn.n_value());
        for (uint32_t hv = 0; hv < Hv; ++hv) {
            const uint32_t hk = dn.grouped_heads ? hv / r : hv % Hk;
            const double b = sigmoid(beta[hv]);
            const double decay = std::exp(dw.a[hv] * softplus(alpha[hv] + dw.dt_bias[hv]));
            Vec& m = M[hv];
            for (double& e : m) e *= decay;
            for (uint32_t j = 0; j < d; ++j) {
                double u = 0;
                for (uint32_t i = 0; i < d; ++i) u += m[size_t{j} * d + i] * k[size_t{hk} * d + i];
                const double delta = b * (v[size_t{hv} * d + j] - u);
                for (uint32_t i = 0; i < d; ++i) m[size_t{j} * d + i] += k[size_t{hk} * d + i] * delta;
            }
            for (uint32_t j = 0; j < d; ++j) {
                double acc = 0;
                for (uint32_t i = 0; i < d; ++i) acc += m[size_t{j} * d + i] * q[size_t{hk} * d + i];
                o[size_t{hv} * d + j] = acc / std::sqrt(static_cast<double>(d));
            }
        }
        // Gated RMSNorm of each value head: rms_norm(o) * ssm_norm * silu(z).
        rms_norm_heads(o, d, dw.norm, eps);
        for (size_t i = 0; i < o.size(); ++i) o[i] *= silu(z[i]);
        out.push_back(out_proj(o));
    }
    return out;
}

// One gated attention layer over every position: attn_q gives per head the
// query then a gate; the attention output is multiplied by sigmoid(gate).
Rows gated_attention_layer(const Input& in, uint32_t layer, const Rows& h) {
    const HParams& hp = in.hp;
    const LayerWeights& lw = in.w.layers[layer];
    const double eps = hp.norm_rms_eps;
    const uint32_t hd = hp.head_dim;
    const Linear wq(lw.wq), wk(lw.wk), wv(lw.wv), wo(lw.wo);
    const Rope rp = layer_rope(in, layer);
    const size_t n = h.size();
    Rows q(n), k(n), v(n), gate(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec qg = wq(h[t]);
        q[t].resize(hp.n_embd_q());
        gate[t].resize(hp.n_embd_q());
        for (uint32_t head = 0; head < hp.n_head; ++head)
            for (uint32_t i = 0; i < hd; ++i) {
                q[t][size_t{head} * hd + i] = qg[size_t{head} * 2 * hd + i];
                gate[t][size_t{head} * hd + i] = qg[size_t{head} * 2 * hd + hd + i];
            }
        k[t] = wk(h[t]);
        v[t] = wv(h[t]);
        rms_norm_heads(q[t], hd, lw.q_norm, eps);
        rms_norm_heads(k[t], hd, lw.k_norm, eps);
        rope(q[t], hd, static_cast<int64_t>(t), rp);
        rope(k[t], hd, static_cast<int64_t>(t), rp);
    }
    Rows o = attention(hp, layer, q, k, v);
    for (size_t t = 0; t < n; ++t) {
        for (size_t i = 0; i < o[t].size(); ++i) o[t][i] *= sigmoid(gate[t][i]);
        o[t] = wo(o[t]);
    }
    return o;
}

}  // namespace

Logits qwen_delta_net(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];
        Rows h(n);
        for (size_t t = 0; t < n; ++t) h[t] = rms_norm(x[t], lw.attn_norm, eps);
        const Rows mixed = hp.is_delta_net(l) ? delta_net_layer(hp, lw.delta, h) : gated_attention_layer(in, l, h);
        for (size_t t = 0; t < n; ++t) add_to(x[t], mixed[t]);

        // Feed-forward on rms_norm(x) (post_attention_norm, loaded as ffn_norm).
        if (hp.is_moe(l)) {
            const MoeFfn moe(hp, lw);
            for (size_t t = 0; t < n; ++t) add_to(x[t], moe(rms_norm(x[t], lw.ffn_norm, eps)));
            continue;
        }
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec f = rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(f);
            const Vec u = up(f);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = silu(g[i]) * u[i];
            add_to(x[t], down(g));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
