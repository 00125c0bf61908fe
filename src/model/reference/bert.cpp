// The float64 reference of the bert-style encoders (bert, nomic-bert), read
// top to bottom as llama.cpp's bert graph: embeddings (+ token type 0, +
// learned positions for bert), LayerNorm; per layer x = LN(x + Wo attn(x))
// with attention both ways over the whole sequence (rope on nomic-bert),
// then x = LN(x + ffn(x)) (bert: down(gelu(up x)), nomic-bert:
// down(silu(gate x) * up x)). The result of every position is its final
// hidden state (an encoder has no output head).

#include <cmath>
#include <optional>

#include "cria/core/error.h"
#include "model/reference/families.h"

namespace cria::model::reference {
namespace {

// LayerNorm (ggml_norm, then weight, then bias).
Vec layer_norm(const Vec& x, const std::vector<float>& weight, const std::vector<float>& bias, double eps) {
    double mean = 0.0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    double var = 0.0;
    for (double v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(x.size());
    const double inv = 1.0 / std::sqrt(var + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * inv * weight[i] + (bias.empty() ? 0.0 : bias[i]);
    return y;
}

// Every query over every key of the sequence (no mask), grouped-query heads.
Rows attention_both_ways(const HParams& hp, const Rows& q, const Rows& k, const Rows& v) {
    const uint32_t hd = hp.head_dim;
    Rows out(q.size(), Vec(static_cast<size_t>(hp.n_head) * hd, 0.0));
    for (size_t t = 0; t < q.size(); ++t)
        for (uint32_t h = 0; h < hp.n_head; ++h) {
            const uint32_t kv = h / hp.n_gqa();
            Vec scores(k.size());
            double max_score = -INFINITY;
            for (size_t s = 0; s < k.size(); ++s) {
                double dot = 0.0;
                for (uint32_t d = 0; d < hd; ++d) dot += q[t][h * hd + d] * k[s][kv * hd + d];
                scores[s] = dot * hp.attention_scale;
                max_score = std::max(max_score, scores[s]);
            }
            double denom = 0.0;
            for (double& s : scores) denom += (s = std::exp(s - max_score));
            for (size_t s = 0; s < k.size(); ++s)
                for (uint32_t d = 0; d < hd; ++d) out[t][h * hd + d] += scores[s] / denom * v[s][kv * hd + d];
        }
    return out;
}

}  // namespace

Logits bert(const Input& in) {
    const HParams& hp = in.hp;
    const Weights& w = in.w;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);
    const bool positions = w.pos_embd.data != nullptr;
    const Matrix pos = positions ? Matrix(w.pos_embd) : Matrix(w.token_embd);
    if (positions && n > hp.n_ctx_train) throw Error("bert: more tokens than learned positions");
    for (size_t t = 0; t < n; ++t) {
        for (uint32_t c = 0; c < hp.n_embd; ++c) {
            if (!w.token_types.empty()) x[t][c] += w.token_types[c];
            if (positions) x[t][c] += pos.values[t * hp.n_embd + c];
        }
        x[t] = layer_norm(x[t], w.token_embd_norm, w.token_embd_norm_bias, hp.norm_eps);
    }
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = w.layers[l];
        const QkvProjection project(hp, lw);
        Rows q(n), k(n), v(n);
        for (size_t t = 0; t < n; ++t) {
            Qkv p = project(x[t]);
            if (hp.uses_rope(l)) {
                const Rope r = layer_rope(in, l);
                rope(p.q, hp.head_dim, static_cast<int64_t>(t), r);
                rope(p.k, hp.head_dim, static_cast<int64_t>(t), r);
            }
            q[t] = std::move(p.q), k[t] = std::move(p.k), v[t] = std::move(p.v);
        }
        const Rows attn = attention_both_ways(hp, q, k, v);
        const Linear wo(lw.wo), up(lw.up), down(lw.down);
        const bool swiglu = lw.gate.w.data != nullptr;
        const Linear* gate = nullptr;
        std::optional<Linear> gate_storage;
        if (swiglu) gate = &gate_storage.emplace(lw.gate);
        for (size_t t = 0; t < n; ++t) {
            Vec y = wo(attn[t]);
            add_to(y, x[t]);
            x[t] = layer_norm(y, lw.post_attn_norm, lw.post_attn_norm_bias, hp.norm_eps);
            Vec u = up(x[t]);
            if (swiglu) {
                const Vec g = (*gate)(x[t]);
                for (size_t i = 0; i < u.size(); ++i) u[i] *= silu(g[i]);
            } else {
                for (double& e : u) e = gelu_tanh(e);
            }
            Vec f = down(u);
            add_to(f, x[t]);
            x[t] = layer_norm(f, lw.post_ffn_norm, lw.post_ffn_norm_bias, hp.norm_eps);
        }
    }
    Logits out(n);
    for (size_t t = 0; t < n; ++t) out[t].assign(x[t].begin(), x[t].end());
    return out;
}

}  // namespace cria::model::reference
