#include "model/reference/helpers.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <cmath>
#include <numbers>
#include <string>

#include "cria/core/error.h"
#include "cria/quant/quantize.h"

namespace cria::model::reference {

Matrix::Matrix(const ops::TensorView& w)
    : rows(static_cast<uint64_t>(w.ne[1])), cols(static_cast<uint64_t>(w.ne[0])), values(rows * cols) {
    if (w.data == nullptr || w.weight_packing != matmul::Packing::None)
        throw Error("reference forward: a weight matrix is missing or packed");
    if (!quant::can_dequantize(w.type)) throw Error("reference forward: a weight matrix has an unsupported type");
    for (uint64_t r = 0; r < rows; ++r)
        quant::dequantize_row(w.type, w.row(static_cast<int64_t>(r)), &values[r * cols], static_cast<int64_t>(cols));
}

Vec Matrix::operator*(const Vec& x) const {
    Vec y(rows, 0.0);
    for (uint64_t r = 0; r < rows; ++r) {
        const float* w = &values[r * cols];
        double sum = 0.0;
        for (uint64_t c = 0; c < cols; ++c) sum += static_cast<double>(w[c]) * x[c];
        y[r] = sum;
    }
    return y;
}

Linear::Linear(const model::Linear& lin) : Linear(lin, lin.w) {}

Linear::Linear(const model::Linear& lin, const ops::TensorView& matrix) : w(matrix), parts(lin) {}

Vec Linear::operator()(const Vec& x) const {
    Vec y = w * x;
    const double scale = parts.has_scale ? parts.scale : 1.0;
    for (uint64_t r = 0; r < y.size(); ++r) {
        const double bias = parts.bias.empty() ? 0.0 : parts.bias[r];
        y[r] = parts.bias_before_scale ? (y[r] + bias) * scale : y[r] * scale + bias;
    }
    return y;
}

Vec rms_norm(const Vec& x, const std::vector<float>& weight, double eps) {
    double sum_sq = 0.0;
    for (double v : x) sum_sq += v * v;
    const double scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * weight[i];
    return y;
}

void rms_norm_heads(Vec& x, uint32_t head_dim, const std::vector<float>& weight, double eps) {
    for (size_t first = 0; first < x.size(); first += head_dim) {
        const Vec normed = rms_norm(slice(x, first, head_dim), weight, eps);
        std::copy(normed.begin(), normed.end(), x.begin() + static_cast<std::ptrdiff_t>(first));
    }
}

Rope layer_rope(const Input& in, uint32_t layer) {
    const HParams& hp = in.hp;
    const bool swa = hp.is_swa(layer);
    Rope r;
    r.n_rot = hp.n_rot;
    r.neox = hp.rope_order == RopeOrder::NeoX || hp.rope_order == RopeOrder::MRope;
    r.mrope = hp.rope_order == RopeOrder::MRope;
    for (int i = 0; i < 4; ++i) r.sections[i] = hp.rope_sections[i];
    r.freq_base = swa ? hp.rope_freq_base_swa : hp.rope_freq_base;
    r.freq_scale = swa ? hp.rope_freq_scale_swa : hp.rope_freq_scale;
    r.attn_factor = hp.rope_attn_factor;
    r.ext_factor = hp.rope_yarn_ext_factor;
    r.beta_fast = hp.rope_yarn_beta_fast;
    r.beta_slow = hp.rope_yarn_beta_slow;
    r.n_ctx_orig = hp.n_ctx_orig ? hp.n_ctx_orig : hp.n_ctx_train;
    const std::vector<float>& factors =
        in.long_rope && !in.w.rope_factors_long.empty() ? in.w.rope_factors_long : in.w.rope_factors;
    if (!factors.empty()) r.factors = &factors;
    return r;
}

void rope(Vec& x, uint32_t head_dim, int64_t pos, const Rope& r) {
    // YaRN's correction range in pair units: the pair whose wavelength fits
    // n_ctx_orig / beta times, floor / ceil, clamped to [0, n_rot - 1].
    const auto corr_dim = [&](double beta) {
        return r.n_rot * std::log(r.n_ctx_orig / (beta * 2.0 * std::numbers::pi)) / (2.0 * std::log(r.freq_base));
    };
    const double low = std::max(0.0, std::floor(corr_dim(r.beta_fast)));
    const double high = std::min(r.n_rot - 1.0, std::ceil(corr_dim(r.beta_slow)));
    for (size_t first = 0; first < x.size(); first += head_dim) {
        double* head = &x[first];
        for (uint32_t i = 0; i < r.n_rot / 2; ++i) {
            const double freq = std::pow(r.freq_base, -2.0 * i / r.n_rot);
            const double factor = r.factors ? (*r.factors)[i] : 1.0;
            int64_t p = pos;
            if (r.mrope) {  // the extra section of a text token sits at position 0
                const int total = r.sections[0] + r.sections[1] + r.sections[2] + r.sections[3];
                if (static_cast<int>(i) % total >= r.sections[0] + r.sections[1] + r.sections[2]) p = 0;
            }
            const double extrapolated = static_cast<double>(p) * freq / factor;
            double theta = extrapolated * r.freq_scale, magnitude = r.attn_factor;
            if (r.ext_factor != 0.0) {
                const double ramp = 1.0 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
                const double mix = ramp * r.ext_factor;
                theta = theta * (1.0 - mix) + extrapolated * mix;
                magnitude *= 1.0 + 0.1 * std::log(1.0 / r.freq_scale);
            }
            const double c = std::cos(theta) * magnitude, s = std::sin(theta) * magnitude;
            const uint32_t a = r.neox ? i : 2 * i;
            const uint32_t b = r.neox ? i + r.n_rot / 2 : 2 * i + 1;
            const double x0 = head[a], x1 = head[b];
            head[a] = x0 * c - x1 * s;
            head[b] = x0 * s + x1 * c;
        }
    }
}

Rows attention(const HParams& hp, uint32_t layer, const Rows& q, const Rows& k, const Rows& v,
               const std::vector<float>* sinks) {
    const uint32_t hd = hp.head_dim, hdv = hp.head_dim_v;
    const bool swa = hp.is_swa(layer);
    Rows out(q.size(), Vec(static_cast<size_t>(hp.n_head) * hdv, 0.0));
    for (size_t t = 0; t < q.size(); ++t) {
        const size_t first = swa && t + 1 > hp.n_swa ? t + 1 - hp.n_swa : 0;  // the first key position t sees
        for (uint32_t h = 0; h < hp.n_head; ++h) {
            const uint32_t kv = h / hp.n_gqa();
            Vec scores(t + 1 - first);
            double max_score = -INFINITY;
            for (size_t s = first; s <= t; ++s) {
                double dot = 0.0;
                for (uint32_t d = 0; d < hd; ++d) dot += q[t][h * hd + d] * k[s][kv * hd + d];
                scores[s - first] = softcap(dot * hp.attention_scale, hp.attn_softcap);
                max_score = std::max(max_score, scores[s - first]);
            }
            // A sink joins the denominator only: exp(sink) over the sum, as one more (value-less) key.
            if (sinks) max_score = std::max(max_score, static_cast<double>((*sinks)[h]));
            double denom = sinks ? std::exp((*sinks)[h] - max_score) : 0.0;
            for (double& s : scores) denom += (s = std::exp(s - max_score));
            for (size_t s = first; s <= t; ++s)
                for (uint32_t d = 0; d < hdv; ++d) out[t][h * hdv + d] += scores[s - first] / denom * v[s][kv * hdv + d];
        }
    }
    return out;
}

QkvProjection::QkvProjection(const HParams& hp_, const LayerWeights& lw) : hp(hp_) {
    if (lw.wqkv.present()) {
        parts.emplace_back(lw.wqkv);
    } else {
        parts.emplace_back(lw.wq);
        parts.emplace_back(lw.wk);
        parts.emplace_back(lw.wv);
    }
}

Qkv QkvProjection::operator()(const Vec& h) const {
    if (parts.size() == 3) return {parts[0](h), parts[1](h), parts[2](h)};
    const Vec qkv = parts[0](h);  // [q; k; v]
    return {slice(qkv, 0, hp.n_embd_q()), slice(qkv, hp.n_embd_q(), hp.n_embd_k()),
            slice(qkv, uint64_t{hp.n_embd_q()} + hp.n_embd_k(), hp.n_embd_v())};
}

double softcap(double x, double cap) { return cap > 0 ? std::tanh(x / cap) * cap : x; }

double gelu_tanh(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535587989211986876;
    return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * x * (1.0 + 0.044715 * x * x)));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

Vec slice(const Vec& x, uint64_t first, uint64_t n) {
    return Vec(x.begin() + static_cast<std::ptrdiff_t>(first), x.begin() + static_cast<std::ptrdiff_t>(first + n));
}

void add_to(Vec& x, const Vec& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

Rows embed(const Input& in, bool scale) {
    const HParams& hp = in.hp;
    const Matrix embd(in.w.token_embd);
    const double factor = (scale ? std::sqrt(static_cast<double>(hp.n_embd)) : 1.0) *
                          (hp.embedding_scale != 0.0f ? static_cast<double>(hp.embedding_scale) : 1.0);
    Rows x(in.tokens.size(), Vec(hp.n_embd));
    for (size_t t = 0; t < in.tokens.size(); ++t) {
        const int32_t id = in.tokens[t];
        if (id < 0 || static_cast<uint32_t>(id) >= hp.n_vocab)
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(hp.n_vocab));
        for (uint32_t c = 0; c < hp.n_embd; ++c) x[t][c] = embd.values[static_cast<uint64_t>(id) * hp.n_embd + c] * factor;
    }
    return x;
}

Logits output_head(const Input& in, const Rows& x) {
    const HParams& hp = in.hp;
    const Linear output(in.w.output, in.w.output.present() ? in.w.output.w : in.w.token_embd);
    Logits logits(x.size());
    for (size_t t = 0; t < x.size(); ++t) {
        const Vec y = output(rms_norm(x[t], in.w.output_norm, hp.norm_rms_eps));
        logits[t].resize(y.size());
        for (size_t i = 0; i < y.size(); ++i)
            logits[t][i] = static_cast<float>(softcap(y[i] * hp.logit_multiplier, hp.final_softcap));
    }
    return logits;
}

Rows self_attention(const Input& in, uint32_t layer, const Rows& x) {
    const HParams& hp = in.hp;
    const LayerWeights& lw = in.w.layers[layer];
    const double eps = hp.norm_rms_eps;
    const QkvProjection qkv(hp, lw);
    const Rope r = layer_rope(in, layer);
    const size_t n = x.size();
    Rows q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
        Qkv p = qkv(lw.attn_norm.empty() ? x[t] : rms_norm(x[t], lw.attn_norm, eps));  // exaone4: no input norm
        if (!lw.q_norm.empty()) {  // over each head, or over the whole vector (olmoe): the weight's width
            rms_norm_heads(p.q, static_cast<uint32_t>(lw.q_norm.size()), lw.q_norm, eps);
            rms_norm_heads(p.k, static_cast<uint32_t>(lw.k_norm.size()), lw.k_norm, eps);
        }
        if (hp.uses_rope(layer)) {
            rope(p.q, hp.head_dim, static_cast<int64_t>(t), r);
            rope(p.k, hp.head_dim, static_cast<int64_t>(t), r);
        }
        q[t] = std::move(p.q);
        k[t] = std::move(p.k);
        v[t] = std::move(p.v);
    }
    return attention(hp, layer, q, k, v, lw.attn_sinks.empty() ? nullptr : &lw.attn_sinks);
}

namespace {

// Expert e of a stacked [cols, rows, n_expert] tensor, dequantised.
std::vector<Matrix> expert_matrices(const ExpertLinear& experts) {
    std::vector<Matrix> out;
    if (!experts.present()) return out;
    const ops::TensorView& w = experts.w;
    for (int64_t e = 0; e < w.ne[2]; ++e)
        out.emplace_back(ops::TensorView::contiguous(w.type, w.row(0, e), {w.ne[0], w.ne[1]}));
    return out;
}

// Expert e's product, times its `.scale` and plus its bias when loaded (in
// that order, as build_moe_ffn: mul_mat_id with the scale, then add_id).
Vec apply_expert(const std::vector<Matrix>& m, const ExpertLinear& lin, size_t e, const Vec& x) {
    Vec y = m[e] * x;
    if (!lin.scale.empty())
        for (double& v : y) v *= lin.scale[e];
    if (!lin.bias.empty())
        for (size_t r = 0; r < y.size(); ++r) y[r] += lin.bias[e * y.size() + r];
    return y;
}

// The gated activation of the experts: silu(g) * u, or gpt-oss's clamped
// SwiGLU with llama.cpp's alpha 1.702 and limit 7.
}  // namespace

double situ(const HParams& hp, double g, double u) {
    const double b = hp.situ_beta, bl = hp.situ_linear_beta;
    return b * std::tanh(g / b) / (1.0 + std::exp(-g)) * (bl > 0 ? bl * std::tanh(u / bl) : u);
}

double limited_swiglu(double g, double u, double limit) {
    if (limit <= 0) return silu(g) * u;
    return std::min(silu(g), limit) * std::clamp(u, -limit, limit);
}

namespace {

double expert_activation(FfnActivation act, double g, double u) {
    switch (act) {
        case FfnActivation::Silu: return silu(g) * u;
        case FfnActivation::GeluTanh: return gelu_tanh(g) * u;
        case FfnActivation::SwigluOai: {
            const double x = std::min(g, 7.0), y = std::clamp(u, -7.0, 7.0);
            return x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0);
        }
    }
    return 0.0;
}

}  // namespace

MoeFfn::MoeFfn(const HParams& hp_, const LayerWeights& lw_)
    : hp(hp_),
      lw(lw_),
      router(lw_.gate_inp),
      gate(expert_matrices(lw_.gate_exps)),
      up(expert_matrices(lw_.up_exps)),
      gate_up(expert_matrices(lw_.gate_up_exps)),
      down(expert_matrices(lw_.down_exps)) {}

Vec MoeFfn::operator()(const Vec& h) const {
    const size_t X = hp.n_expert, K = hp.n_expert_used;
    const Vec logits = router(h);
    Vec pi(X);
    switch (hp.expert_gating) {
        case ExpertGating::Softmax: {
            const double max = *std::max_element(logits.begin(), logits.end());
            double sum = 0;
            for (size_t e = 0; e < X; ++e) sum += pi[e] = std::exp(logits[e] - max);
            for (double& p : pi) p /= sum;
            break;
        }
        case ExpertGating::Sigmoid:
            for (size_t e = 0; e < X; ++e) pi[e] = 1.0 / (1.0 + std::exp(-logits[e]));
            break;
        case ExpertGating::SoftmaxWeight: pi = logits; break;
    }
    Vec score = pi;  // selection: the gate scores plus exp_probs_b when loaded (never in the weights)
    if (!lw.exp_probs_b.empty())
        for (size_t e = 0; e < X; ++e) score[e] += lw.exp_probs_b[e];
    if (hp.expert_group_count > 1) {
        // Expert groups: rank the groups by the sum of their two best scores;
        // the experts of all but the best expert_group_used are out of the running.
        const size_t G = hp.expert_group_count, per = X / G;
        std::vector<std::pair<double, size_t>> groups;
        for (size_t g = 0; g < G; ++g) {
            Vec v(score.begin() + static_cast<std::ptrdiff_t>(g * per), score.begin() + static_cast<std::ptrdiff_t>((g + 1) * per));
            std::sort(v.begin(), v.end(), std::greater<>());
            groups.emplace_back(v[0] + v[1], g);
        }
        std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (size_t i = hp.expert_group_used; i < G; ++i)
            for (size_t e = groups[i].second * per; e < (groups[i].second + 1) * per; ++e) score[e] = -INFINITY;
    }
    std::vector<size_t> order(X);
    for (size_t e = 0; e < X; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
    Vec w(K);
    for (size_t j = 0; j < K; ++j) w[j] = pi[order[j]];
    if (hp.expert_gating == ExpertGating::SoftmaxWeight) {
        const double max = *std::max_element(w.begin(), w.end());
        double sum = 0;
        for (double& v : w) sum += v = std::exp(v - max);
        for (double& v : w) v /= sum;
    }
    if (hp.expert_weights_norm) {
        double sum = 0;
        for (double v : w) sum += v;
        for (double& v : w) v /= std::max(sum, 6.103515625e-5);
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
        for (double& v : w) v *= hp.expert_weights_scale;

    // The experts' input: h, or its latent (kimi-k3).
    const bool latent = lw.latent_down.present();
    const Vec hx = latent ? Linear(lw.latent_down)(h) : h;
    // The activation: situ (kimi-k3), a trained limit, or the expert activation.
    const auto act = [&](double g, double u) {
        if (hp.situ_beta > 0) return situ(hp, g, u);
        return expert_limit > 0 ? limited_swiglu(g, u, expert_limit) : expert_activation(hp.expert_activation, g, u);
    };
    Vec out(hx.size(), 0.0);
    for (size_t j = 0; j < K; ++j) {
        const size_t e = order[j];
        Vec a;
        if (!gate_up.empty()) {  // the fused [gate; up] of the expert
            const Vec gu = apply_expert(gate_up, lw.gate_up_exps, e, hx);
            const size_t F = gu.size() / 2;
            a.resize(F);
            for (size_t i = 0; i < F; ++i) a[i] = act(gu[i], gu[F + i]);
        } else {
            a = apply_expert(up, lw.up_exps, e, hx);
            if (!gate.empty()) {
                const Vec g = apply_expert(gate, lw.gate_exps, e, hx);
                for (size_t i = 0; i < a.size(); ++i) a[i] = act(g[i], a[i]);
            } else {
                for (double& v : a) v = silu(v);
            }
        }
        const Vec y = apply_expert(down, lw.down_exps, e, a);
        for (size_t i = 0; i < out.size(); ++i) out[i] += w[j] * y[i];
    }
    if (latent) {  // the latent sum, normed when the file has the norm, back to n_embd
        if (!lw.latent_norm.empty()) out = rms_norm(out, lw.latent_norm, hp.norm_rms_eps);
        out = Linear(lw.latent_up)(out);
    }
    if (lw.up_shexp.present()) {  // the shared expert, gated by sigmoid(gate_inp_shexp · h) when present
        Vec g = Linear(lw.gate_shexp)(h);
        const Vec u = Linear(lw.up_shexp)(h);
        for (size_t i = 0; i < g.size(); ++i)
            g[i] = hp.situ_beta > 0 ? situ(hp, g[i], u[i]) : limited_swiglu(g[i], u[i], shared_limit);
        Vec y = Linear(lw.down_shexp)(g);
        if (lw.gate_inp_shexp.present()) {
            const double z = Linear(lw.gate_inp_shexp)(h)[0];
            for (double& v : y) v /= 1.0 + std::exp(-z);
        }
        add_to(out, y);
    }
    return out;
}

}  // namespace cria::model::reference
