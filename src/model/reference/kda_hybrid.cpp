// kimi-linear, bailingmoe3 and kimi-k3 in float64, top to bottom: Kimi
// delta attention layers and multi-head latent attention layers
// (reference/mla.h), each followed by a SwiGLU block (the leading dense
// layers) or a mixture of experts with a shared expert (MoeFfn; bailingmoe3's
// trained SwiGLU limits on both; kimi-k3's situ and latent experts), and
// kimi-k3's attention residuals across layers. The KDA layer is the recurrence itself, token after token, in
// double (the definition the fast path's chunked form reformulates).

#include <algorithm>
#include <cmath>

#include "model/reference/families.h"
#include "model/reference/mla.h"

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

// y = second(first(x)), or first(x) when the layer has one full-rank matrix.
Vec low_rank(const model::Linear& first, const model::Linear& second, const Vec& x) {
    const Vec m = Linear(first)(x);
    return second.present() ? Linear(second)(m) : m;
}

// One causal depthwise convolution with its window of past inputs (zeros
// at first), then SiLU.
struct Conv {
    Conv(const std::vector<float>& taps_, uint32_t K_, uint32_t channels)
        : taps(taps_), K(K_), window(K_ - 1, Vec(channels, 0.0)) {}
    Vec operator()(const Vec& x) {
        window.push_back(x);
        Vec y(x.size());
        for (size_t c = 0; c < x.size(); ++c) {
            double acc = 0;
            for (uint32_t i = 0; i < K; ++i) acc += taps[c * K + i] * window[window.size() - K + i][c];
            y[c] = silu(acc);
        }
        window.erase(window.begin());
        return y;
    }
    const std::vector<float>& taps;
    uint32_t K;
    Rows window;
};

// One KDA layer over every position (h: the normed inputs).
Rows kda_layer(const HParams& hp, const KdaWeights& kw, const Rows& h) {
    const HParams::Kda& kd = hp.kda;
    const uint32_t d = kd.head_dim, H = kd.n_heads, D = kd.n_value();
    const double eps = hp.norm_rms_eps, lb = kd.gate_lower_bound;
    const Linear wq(kw.q), wk(kw.k), wv(kw.v), wbeta(kw.beta), wo(kw.out);
    Conv conv_q(kw.conv_q, kd.conv_kernel, D), conv_k(kw.conv_k, kd.conv_kernel, D), conv_v(kw.conv_v, kd.conv_kernel, D);
    std::vector<Vec> M(H, Vec(size_t{d} * d, 0.0));  // per head, M[j * d + i]: key i, value j
    Rows out;
    for (const Vec& x : h) {
        Vec q = conv_q(wq(x)), k = conv_k(wk(x));
        const Vec v = conv_v(wv(x));
        l2_norm_heads(q, d, eps);
        l2_norm_heads(k, d, eps);
        const Vec a = low_rank(kw.f_a, kw.f_b, x), beta = wbeta(x), gate = low_rank(kw.g_a, kw.g_b, x);
        Vec o(D);
        for (uint32_t hd = 0; hd < H; ++hd) {
            const double A = (kd.gate_negates_a ? -1.0 : 1.0) * kw.a[hd];
            Vec& m = M[hd];
            for (uint32_t i = 0; i < d; ++i) {  // the decay of key channel i
                const size_t c = size_t{hd} * d + i;
                const double ai = a[c] + kw.dt_bias[c];
                const double g = lb < 0 ? lb * sigmoid(A * ai) : A * softplus(ai);
                for (uint32_t j = 0; j < d; ++j) m[size_t{j} * d + i] *= std::exp(g);
            }
            const double b = sigmoid(beta[hd]);
            const double* kh = &k[size_t{hd} * d];
            const double* qh = &q[size_t{hd} * d];
            for (uint32_t j = 0; j < d; ++j) {
                double u = 0;
                for (uint32_t i = 0; i < d; ++i) u += m[size_t{j} * d + i] * kh[i];
                const double delta = b * (v[size_t{hd} * d + j] - u);
                for (uint32_t i = 0; i < d; ++i) m[size_t{j} * d + i] += kh[i] * delta;
            }
            for (uint32_t j = 0; j < d; ++j) {
                double acc = 0;
                for (uint32_t i = 0; i < d; ++i) acc += m[size_t{j} * d + i] * qh[i];
                o[size_t{hd} * d + j] = acc / std::sqrt(static_cast<double>(d));
            }
        }
        // RMSNorm of each head times sigmoid of the output gate.
        rms_norm_heads(o, d, kw.norm, eps);
        for (size_t i = 0; i < o.size(); ++i) o[i] *= sigmoid(gate[i]);
        out.push_back(wo(o));
    }
    return out;
}

// kimi-k3's mix of the banked layer inputs and the current vectors: per
// position the softmax over sum_d rms_norm(v)[d] w[d] (no norm weight) of
// each banked vector and the current one, then their weighted sum (of the
// raw vectors). Nothing banked: the current vectors.
Rows residual_mix(const std::vector<Rows>& bank, const Rows& cur, const std::vector<float>& w, double eps) {
    if (bank.empty()) return cur;
    Rows out(cur.size());
    for (size_t t = 0; t < cur.size(); ++t) {
        std::vector<const Vec*> vs;
        for (const Rows& b : bank) vs.push_back(&b[t]);
        vs.push_back(&cur[t]);
        Vec score(vs.size());
        for (size_t j = 0; j < vs.size(); ++j) {
            double ss = 0, dot = 0;
            for (size_t d = 0; d < w.size(); ++d) {
                ss += (*vs[j])[d] * (*vs[j])[d];
                dot += (*vs[j])[d] * w[d];
            }
            score[j] = dot / std::sqrt(ss / static_cast<double>(w.size()) + eps);
        }
        const double max = *std::max_element(score.begin(), score.end());
        double sum = 0;
        for (double& v : score) sum += v = std::exp(v - max);
        out[t].assign(w.size(), 0.0);
        for (size_t j = 0; j < vs.size(); ++j)
            for (size_t d = 0; d < w.size(); ++d) out[t][d] += score[j] / sum * (*vs[j])[d];
    }
    return out;
}

double layer_limit(const std::vector<float>& limits, uint32_t layer) {
    const double l = layer < limits.size() ? limits[layer] : 0.0;
    return l > 1e-6 ? l : 0.0;
}

}  // namespace

Logits kda_hybrid(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    const uint32_t B = hp.attn_res_block_size;
    Rows x = embed(in, /*scale=*/false);
    std::vector<Rows> bank;  // kimi-k3's banked layer inputs

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];
        // The mixer's input: the stream, or with attention residuals its mix with the bank.
        const bool banking = B > 0 && l % B == 0;
        const Rows a_in = B > 0 ? residual_mix(bank, x, lw.attn_res_score, eps) : x;
        if (banking) bank.push_back(x);
        Rows a(n);
        if (hp.is_kda(l)) {
            Rows h(n);
            for (size_t t = 0; t < n; ++t) h[t] = rms_norm(a_in[t], lw.attn_norm, eps);
            a = kda_layer(hp, lw.kda, h);
        } else {
            const Rows attn = latent_attention(in, l, a_in);
            const Linear wo(lw.wo);
            for (size_t t = 0; t < n; ++t) a[t] = wo(attn[t]);
        }
        Rows stream = banking ? a : x;
        if (!banking)
            for (size_t t = 0; t < n; ++t) add_to(stream[t], a[t]);
        const Rows f_in = B > 0 ? residual_mix(bank, stream, lw.ffn_res_score, eps) : stream;

        const double shared_limit = layer_limit(hp.swiglu_clamp_shexp, l);
        if (hp.is_moe(l)) {
            MoeFfn moe(hp, lw);
            moe.expert_limit = layer_limit(hp.swiglu_clamp_exp, l);
            moe.shared_limit = shared_limit;
            for (size_t t = 0; t < n; ++t) add_to(stream[t], moe(rms_norm(f_in[t], lw.ffn_norm, eps)));
        } else {
            const Linear gate(lw.gate), up(lw.up), down(lw.down);
            for (size_t t = 0; t < n; ++t) {
                const Vec h = rms_norm(f_in[t], lw.ffn_norm, eps);
                Vec g = gate(h);
                const Vec u = up(h);
                for (size_t i = 0; i < g.size(); ++i)
                    g[i] = hp.situ_beta > 0 ? situ(hp, g[i], u[i]) : limited_swiglu(g[i], u[i], shared_limit);
                add_to(stream[t], down(g));
            }
        }
        x = std::move(stream);
    }
    if (B > 0) x = residual_mix(bank, x, in.w.output_res_score, eps);
    return output_head(in, x);
}

}  // namespace cria::model::reference
