#include "cria/model/reference_forward.h"

#include <cmath>
#include <string>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/hparams.h"
#include "cria/quant/quantize.h"
#include "model/tensor_lookup.h"

namespace cria::model {
namespace {

using Vec = std::vector<double>;

// A weight matrix with `rows` outputs of `cols` inputs each, dequantized.
// GGUF stores it as ne = [cols, rows]: one contiguous row per output.
struct Matrix {
    uint64_t rows = 0, cols = 0;
    std::vector<float> values;
    // A linear layer's optional parts: y = scale * (W x) + bias.
    std::vector<float> bias;
    double scale = 1.0;

    Vec apply(const Vec& x) const {
        Vec y(rows, 0.0);
        for (uint64_t r = 0; r < rows; ++r) {
            double sum = 0.0;
            const float* w = &values[r * cols];
            for (uint64_t c = 0; c < cols; ++c) sum += static_cast<double>(w[c]) * x[c];
            y[r] = sum * scale + (bias.empty() ? 0.0 : bias[r]);
        }
        return y;
    }
};

class WeightReader {
public:
    explicit WeightReader(const gguf::File& file) : file_(file) {}

    Matrix matrix(const std::string& name, uint64_t cols, uint64_t rows) const {
        const gguf::TensorInfo& t = detail::require_matrix(file_, name, cols, rows);
        Matrix m{rows, cols, std::vector<float>(rows * cols)};
        quant::dequantize_row(t.type, file_.tensor_data(t).data(), m.values.data(), static_cast<int64_t>(rows * cols));
        return m;
    }

    std::vector<float> vector(const std::string& name, uint64_t n) const { return detail::read_vector(file_, name, n); }

    // `base`.weight with its optional `base`.bias and `base`.scale.
    Matrix linear(const std::string& base, uint64_t cols, uint64_t rows) const {
        Matrix m = matrix(base + ".weight", cols, rows);
        if (file_.find_tensor(base + ".bias")) m.bias = vector(base + ".bias", rows);
        if (file_.find_tensor(base + ".scale")) m.scale = vector(base + ".scale", 1)[0];
        return m;
    }

private:
    const gguf::File& file_;
};

Vec rms_norm(const Vec& x, const std::vector<float>& weight, double eps) {
    double sum_sq = 0.0;
    for (double v : x) sum_sq += v * v;
    const double scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * weight[i];
    return y;
}

// Rotates the first n_rot dimensions of one head in place, as ggml_rope_ext
// does without YaRN: angle pos * freq_scale * base^(-2i/n_rot) / factor[i],
// with cos and sin scaled by attn_factor.
void rope_head(double* head, int64_t pos, const HParams& hp, double freq_base, double freq_scale,
               const std::vector<float>& factors) {
    const uint32_t n_rot = hp.n_rot;
    for (uint32_t i = 0; i < n_rot / 2; ++i) {
        const double freq = std::pow(freq_base, -2.0 * i / n_rot);
        const double factor = factors.empty() ? 1.0 : factors[i];
        const double theta = static_cast<double>(pos) * freq_scale * freq / factor;
        const double c = std::cos(theta) * hp.rope_attn_factor, s = std::sin(theta) * hp.rope_attn_factor;
        const uint32_t a = hp.rope_order == RopeOrder::Normal ? 2 * i : i;
        const uint32_t b = hp.rope_order == RopeOrder::Normal ? 2 * i + 1 : i + n_rot / 2;
        const double x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * s;
        head[b] = x0 * s + x1 * c;
    }
}

// RMSNorm over each head of width `hd` in a row of heads.
void norm_heads(Vec& x, uint32_t n_heads, uint32_t hd, const std::vector<float>& weight, double eps) {
    for (uint32_t h = 0; h < n_heads; ++h) {
        const Vec head(x.begin() + h * hd, x.begin() + (h + 1) * hd);
        const Vec normed = rms_norm(head, weight, eps);
        std::copy(normed.begin(), normed.end(), x.begin() + h * hd);
    }
}

double softcap(double x, double cap) { return cap > 0 ? std::tanh(x / cap) * cap : x; }

// GELU with the tanh approximation, as ggml_gelu computes it.
double gelu_tanh(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535587989211986876;
    return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * x * (1.0 + 0.044715 * x * x)));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

}  // namespace

std::vector<std::vector<float>> reference_forward(const gguf::File& file, std::span<const int32_t> tokens) {
    const HParams hp = read_hparams(file);
    const WeightReader w(file);
    const size_t n = tokens.size();
    const uint32_t hd = hp.head_dim, hdv = hp.head_dim_v;
    const std::vector<float> rope_factors =
        hp.rope_factors_tensor.empty() ? std::vector<float>{} : w.vector(hp.rope_factors_tensor, hp.n_rot / 2);

    // Embedding lookup (gemma scales it by sqrt(width)).
    const Matrix embd = w.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);
    const double embd_scale = hp.scale_embeddings ? std::sqrt(static_cast<double>(hp.n_embd)) : 1.0;
    std::vector<Vec> x(n, Vec(hp.n_embd));
    for (size_t t = 0; t < n; ++t) {
        if (tokens[t] < 0 || static_cast<uint32_t>(tokens[t]) >= hp.n_vocab)
            throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary of " +
                        std::to_string(hp.n_vocab));
        for (uint32_t c = 0; c < hp.n_embd; ++c)
            x[t][c] = embd.values[tokens[t] * static_cast<uint64_t>(hp.n_embd) + c] * embd_scale;
    }

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const bool swa = hp.is_swa(l);
        const double freq_base = swa ? hp.rope_freq_base_swa : hp.rope_freq_base;
        const double freq_scale = swa ? hp.rope_freq_scale_swa : hp.rope_freq_scale;

        // Projections: separate Q, K, V, or one fused matrix split in that order.
        const auto attn_norm = w.vector(p + "attn_norm.weight", hp.n_embd);
        Matrix wq, wk, wv, wqkv;
        if (hp.fused_qkv) {
            wqkv = w.linear(p + "attn_qkv", hp.n_embd, hp.n_embd_q() + hp.n_embd_k() + hp.n_embd_v());
        } else {
            wq = w.linear(p + "attn_q", hp.n_embd, hp.n_embd_q());
            wk = w.linear(p + "attn_k", hp.n_embd, hp.n_embd_k());
            wv = w.linear(p + "attn_v", hp.n_embd, hp.n_embd_v());
        }
        const Matrix wo = w.linear(p + "attn_output", hp.n_head * hdv, hp.n_embd);
        std::vector<float> q_norm, k_norm, post_attn_norm;
        if (hp.has_post_norms) post_attn_norm = w.vector(p + "post_attention_norm.weight", hp.n_embd);
        if (hp.has_qk_norm) {
            q_norm = w.vector(p + "attn_q_norm.weight", hd);
            k_norm = w.vector(p + "attn_k_norm.weight", hd);
        }

        // Attention: project every position, then attend causally.
        std::vector<Vec> q(n), k(n), v(n);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], attn_norm, hp.norm_rms_eps);
            if (hp.fused_qkv) {
                const Vec qkv = wqkv.apply(h);
                q[t].assign(qkv.begin(), qkv.begin() + hp.n_embd_q());
                k[t].assign(qkv.begin() + hp.n_embd_q(), qkv.begin() + hp.n_embd_q() + hp.n_embd_k());
                v[t].assign(qkv.begin() + hp.n_embd_q() + hp.n_embd_k(), qkv.end());
            } else {
                q[t] = wq.apply(h);
                k[t] = wk.apply(h);
                v[t] = wv.apply(h);
            }
            if (hp.has_qk_norm) {
                norm_heads(q[t], hp.n_head, hd, q_norm, hp.norm_rms_eps);
                norm_heads(k[t], hp.n_head_kv, hd, k_norm, hp.norm_rms_eps);
            }
            const auto pos = static_cast<int64_t>(t);
            for (uint32_t h = 0; h < hp.n_head; ++h) rope_head(&q[t][h * hd], pos, hp, freq_base, freq_scale, rope_factors);
            for (uint32_t h = 0; h < hp.n_head_kv; ++h) rope_head(&k[t][h * hd], pos, hp, freq_base, freq_scale, rope_factors);
        }
        for (size_t t = 0; t < n; ++t) {
            // Keys visible from position t: all earlier ones, or the window.
            const size_t first = swa && t + 1 > hp.n_swa ? t + 1 - hp.n_swa : 0;
            Vec attn(static_cast<size_t>(hp.n_head) * hdv, 0.0);
            for (uint32_t h = 0; h < hp.n_head; ++h) {
                const uint32_t kv_head = h / hp.n_gqa();
                std::vector<double> scores(t + 1 - first);
                double max_score = -INFINITY;
                for (size_t s = first; s <= t; ++s) {
                    double dot = 0.0;
                    for (uint32_t d = 0; d < hd; ++d) dot += q[t][h * hd + d] * k[s][kv_head * hd + d];
                    double& score = scores[s - first];
                    score = softcap(dot * hp.attention_scale, hp.attn_softcap);
                    max_score = std::max(max_score, score);
                }
                double denom = 0.0;
                for (double& s : scores) denom += (s = std::exp(s - max_score));
                for (size_t s = first; s <= t; ++s)
                    for (uint32_t d = 0; d < hdv; ++d)
                        attn[h * hdv + d] += scores[s - first] / denom * v[s][kv_head * hdv + d];
            }
            Vec out = wo.apply(attn);
            if (hp.has_post_norms) out = rms_norm(out, post_attn_norm, hp.norm_rms_eps);
            for (uint32_t c = 0; c < hp.n_embd; ++c) x[t][c] += out[c];
        }

        // Feed-forward: act(gate) * up, then down. phi3 stores gate and up in
        // one matrix, gate rows first.
        const auto ffn_norm = w.vector(p + "ffn_norm.weight", hp.n_embd);
        Matrix gate, up;
        if (hp.fused_gate_up) {
            up = w.linear(p + "ffn_up", hp.n_embd, 2 * uint64_t{hp.n_ff});
        } else {
            gate = w.linear(p + "ffn_gate", hp.n_embd, hp.n_ff);
            up = w.linear(p + "ffn_up", hp.n_embd, hp.n_ff);
        }
        const Matrix down = w.linear(p + "ffn_down", hp.n_ff, hp.n_embd);
        std::vector<float> post_ffn_norm;
        if (hp.has_post_norms) post_ffn_norm = w.vector(p + "post_ffw_norm.weight", hp.n_embd);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], ffn_norm, hp.norm_rms_eps);
            Vec g, u;
            if (hp.fused_gate_up) {
                const Vec both = up.apply(h);
                g.assign(both.begin(), both.begin() + hp.n_ff);
                u.assign(both.begin() + hp.n_ff, both.end());
            } else {
                g = gate.apply(h);
                u = up.apply(h);
            }
            for (uint32_t i = 0; i < hp.n_ff; ++i)
                g[i] = (hp.ffn_activation == FfnActivation::Silu ? silu(g[i]) : gelu_tanh(g[i])) * u[i];
            Vec out = down.apply(g);
            if (hp.has_post_norms) out = rms_norm(out, post_ffn_norm, hp.norm_rms_eps);
            for (uint32_t c = 0; c < hp.n_embd; ++c) x[t][c] += out[c];
        }
    }

    const auto out_norm = w.vector("output_norm.weight", hp.n_embd);
    const Matrix output =
        hp.tied_output ? w.matrix("token_embd.weight", hp.n_embd, hp.n_vocab) : w.linear("output", hp.n_embd, hp.n_vocab);
    std::vector<std::vector<float>> logits(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec y = output.apply(rms_norm(x[t], out_norm, hp.norm_rms_eps));
        logits[t].resize(y.size());
        for (size_t i = 0; i < y.size(); ++i) logits[t][i] = static_cast<float>(softcap(y[i], hp.final_softcap));
    }
    return logits;
}

}  // namespace cria::model
