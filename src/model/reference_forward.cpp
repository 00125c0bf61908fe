#include "cria/model/reference_forward.h"

#include <cmath>
#include <string>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/hparams.h"
#include "cria/quant/quantize.h"

namespace cria::model {
namespace {

using Vec = std::vector<double>;

// A weight matrix with `rows` outputs of `cols` inputs each, dequantized.
// GGUF stores it as ne = [cols, rows]: one contiguous row per output.
struct Matrix {
    uint64_t rows = 0, cols = 0;
    std::vector<float> values;

    Vec apply(const Vec& x) const {
        Vec y(rows, 0.0);
        for (uint64_t r = 0; r < rows; ++r) {
            double sum = 0.0;
            const float* w = &values[r * cols];
            for (uint64_t c = 0; c < cols; ++c) sum += static_cast<double>(w[c]) * x[c];
            y[r] = sum;
        }
        return y;
    }
};

class WeightReader {
public:
    explicit WeightReader(const gguf::File& file) : file_(file) {}

    bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

    Matrix matrix(const std::string& name, uint64_t cols, uint64_t rows) const {
        const gguf::TensorInfo& t = require(name);
        if (t.n_dims != 2 || t.ne[0] != cols || t.ne[1] != rows)
            throw Error(file_.path() + ": tensor '" + name + "' should have shape [" + std::to_string(cols) + ", " +
                        std::to_string(rows) + "]");
        Matrix m{rows, cols, std::vector<float>(rows * cols)};
        quant::dequantize_row(t.type, file_.tensor_data(t).data(), m.values.data(), static_cast<int64_t>(rows * cols));
        return m;
    }

    std::vector<float> vector(const std::string& name, uint64_t n) const {
        const gguf::TensorInfo& t = require(name);
        if (t.n_elements() != n)
            throw Error(file_.path() + ": tensor '" + name + "' should have " + std::to_string(n) + " values");
        std::vector<float> v(n);
        quant::dequantize_row(t.type, file_.tensor_data(t).data(), v.data(), static_cast<int64_t>(n));
        return v;
    }

private:
    const gguf::TensorInfo& require(const std::string& name) const {
        const gguf::TensorInfo* t = file_.find_tensor(name);
        if (!t) throw Error(file_.path() + ": missing tensor '" + name + "'");
        return *t;
    }
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

// Rotates the first n_rot dimensions of one head in place.
void rope_head(double* head, uint32_t n_rot, int64_t pos, const HParams& hp) {
    for (uint32_t i = 0; i < n_rot / 2; ++i) {
        const double freq = std::pow(static_cast<double>(hp.rope_freq_base), -2.0 * i / n_rot);
        const double theta = static_cast<double>(pos) * hp.rope_freq_scale * freq;
        const uint32_t a = hp.rope_order == RopeOrder::Normal ? 2 * i : i;
        const uint32_t b = hp.rope_order == RopeOrder::Normal ? 2 * i + 1 : i + n_rot / 2;
        const double x0 = head[a], x1 = head[b];
        head[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        head[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
}

void add_bias(Vec& x, const std::vector<float>& bias) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += bias[i];
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

}  // namespace

std::vector<std::vector<float>> reference_forward(const gguf::File& file, std::span<const int32_t> tokens) {
    const HParams hp = read_hparams(file);
    const WeightReader w(file);
    const size_t n = tokens.size();
    const uint32_t hd = hp.head_dim, hdv = hp.head_dim_v;

    // Embedding lookup.
    const Matrix embd = w.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);
    std::vector<Vec> x(n, Vec(hp.n_embd));
    for (size_t t = 0; t < n; ++t) {
        if (tokens[t] < 0 || static_cast<uint32_t>(tokens[t]) >= hp.n_vocab)
            throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary of " +
                        std::to_string(hp.n_vocab));
        for (uint32_t c = 0; c < hp.n_embd; ++c) x[t][c] = embd.values[tokens[t] * static_cast<uint64_t>(hp.n_embd) + c];
    }

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const auto attn_norm = w.vector(p + "attn_norm.weight", hp.n_embd);
        const Matrix wq = w.matrix(p + "attn_q.weight", hp.n_embd, hp.n_embd_q());
        const Matrix wk = w.matrix(p + "attn_k.weight", hp.n_embd, hp.n_embd_k());
        const Matrix wv = w.matrix(p + "attn_v.weight", hp.n_embd, hp.n_embd_v());
        const Matrix wo = w.matrix(p + "attn_output.weight", hp.n_head * hdv, hp.n_embd);

        std::vector<float> q_bias, k_bias, v_bias, q_norm, k_norm;
        if (hp.has_qkv_bias) {
            q_bias = w.vector(p + "attn_q.bias", hp.n_embd_q());
            k_bias = w.vector(p + "attn_k.bias", hp.n_embd_k());
            v_bias = w.vector(p + "attn_v.bias", hp.n_embd_v());
        }
        if (hp.has_qk_norm) {
            q_norm = w.vector(p + "attn_q_norm.weight", hd);
            k_norm = w.vector(p + "attn_k_norm.weight", hd);
        }

        // Attention: project every position, then attend causally.
        std::vector<Vec> q(n), k(n), v(n);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], attn_norm, hp.norm_rms_eps);
            q[t] = wq.apply(h);
            k[t] = wk.apply(h);
            v[t] = wv.apply(h);
            if (hp.has_qkv_bias) {
                add_bias(q[t], q_bias);
                add_bias(k[t], k_bias);
                add_bias(v[t], v_bias);
            }
            if (hp.has_qk_norm) {
                for (uint32_t h = 0; h < hp.n_head; ++h) {
                    Vec head(q[t].begin() + h * hd, q[t].begin() + (h + 1) * hd);
                    head = rms_norm(head, q_norm, hp.norm_rms_eps);
                    std::copy(head.begin(), head.end(), q[t].begin() + h * hd);
                }
                for (uint32_t h = 0; h < hp.n_head_kv; ++h) {
                    Vec head(k[t].begin() + h * hd, k[t].begin() + (h + 1) * hd);
                    head = rms_norm(head, k_norm, hp.norm_rms_eps);
                    std::copy(head.begin(), head.end(), k[t].begin() + h * hd);
                }
            }
            for (uint32_t h = 0; h < hp.n_head; ++h) rope_head(&q[t][h * hd], hp.n_rot, static_cast<int64_t>(t), hp);
            for (uint32_t h = 0; h < hp.n_head_kv; ++h) rope_head(&k[t][h * hd], hp.n_rot, static_cast<int64_t>(t), hp);
        }
        const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
        for (size_t t = 0; t < n; ++t) {
            Vec attn(static_cast<size_t>(hp.n_head) * hdv, 0.0);
            for (uint32_t h = 0; h < hp.n_head; ++h) {
                const uint32_t kv_head = h / hp.n_gqa();
                std::vector<double> scores(t + 1);
                double max_score = -INFINITY;
                for (size_t s = 0; s <= t; ++s) {
                    double dot = 0.0;
                    for (uint32_t d = 0; d < hd; ++d) dot += q[t][h * hd + d] * k[s][kv_head * hd + d];
                    scores[s] = dot * scale;
                    max_score = std::max(max_score, scores[s]);
                }
                double denom = 0.0;
                for (double& s : scores) denom += (s = std::exp(s - max_score));
                for (size_t s = 0; s <= t; ++s)
                    for (uint32_t d = 0; d < hdv; ++d) attn[h * hdv + d] += scores[s] / denom * v[s][kv_head * hdv + d];
            }
            const Vec out = wo.apply(attn);
            for (uint32_t c = 0; c < hp.n_embd; ++c) x[t][c] += out[c];
        }

        // Feed-forward (SwiGLU).
        const auto ffn_norm = w.vector(p + "ffn_norm.weight", hp.n_embd);
        const Matrix gate = w.matrix(p + "ffn_gate.weight", hp.n_embd, hp.n_ff);
        const Matrix up = w.matrix(p + "ffn_up.weight", hp.n_embd, hp.n_ff);
        const Matrix down = w.matrix(p + "ffn_down.weight", hp.n_ff, hp.n_embd);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], ffn_norm, hp.norm_rms_eps);
            Vec g = gate.apply(h);
            const Vec u = up.apply(h);
            for (uint32_t i = 0; i < hp.n_ff; ++i) g[i] = silu(g[i]) * u[i];
            const Vec out = down.apply(g);
            for (uint32_t c = 0; c < hp.n_embd; ++c) x[t][c] += out[c];
        }
    }

    const auto out_norm = w.vector("output_norm.weight", hp.n_embd);
    const Matrix output = w.matrix(hp.tied_output ? "token_embd.weight" : "output.weight", hp.n_embd, hp.n_vocab);
    std::vector<std::vector<float>> logits(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec y = output.apply(rms_norm(x[t], out_norm, hp.norm_rms_eps));
        logits[t].assign(y.begin(), y.end());
    }
    return logits;
}

}  // namespace cria::model
