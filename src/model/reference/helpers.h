#pragma once
// The double-precision pieces the reference forward of every family is
// written with (reference/<family>.cpp): plain loops over one position at a
// time, float64 accumulation, no cache, no threads, no SIMD. Each mirrors
// what llama.cpp's graph computes (ggml_rms_norm, ggml_rope_ext with YaRN,
// soft-capped causal attention, ggml_gelu's tanh form, ...), written for
// reading rather than speed.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "cria/model/hparams.h"
#include "cria/model/model.h"

namespace cria::model::reference {

using Vec = std::vector<double>;
using Rows = std::vector<Vec>;  // one vector per position
using Logits = std::vector<std::vector<float>>;

// What a family's forward reads: the weights exactly as the architecture's
// tensor table loads them for the fast path (same tensors, same optional
// parts, same ScaleUse), but never packed: views into the file, dequantised
// here as they are used. Tokens sit at positions 0..n-1 of one sequence.
struct Input {
    const HParams& hp;
    const Weights& w;
    std::span<const int32_t> tokens;
    bool long_rope = false;  // phi3: the long rope factors (Model::long_rope_for_context)
};

// A weight matrix dequantised: `rows` outputs of `cols` inputs each (GGUF's
// ne = [cols, rows], one row per output).
struct Matrix {
    explicit Matrix(const ops::TensorView& w);
    Vec operator*(const Vec& x) const;

    uint64_t rows = 0, cols = 0;
    std::vector<float> values;
};

// A linear layer as the tensor table loaded it: y = W x, then the file's
// optional `.scale` and `.bias` in the order its ScaleUse says (scale then
// bias for attention projections, bias then scale for feed-forward matrices;
// an ignored scale was never loaded).
struct Linear {
    explicit Linear(const model::Linear& lin);
    // The layer's bias and scale on another matrix (a tied output uses token_embd).
    Linear(const model::Linear& lin, const ops::TensorView& matrix);
    Vec operator()(const Vec& x) const;

    Matrix w;
    const model::Linear& parts;
};

// RMSNorm of x times weight.
Vec rms_norm(const Vec& x, const std::vector<float>& weight, double eps);
// RMSNorm over each head of width `head_dim` in a row of heads (qwen3 / gemma3 QK norm).
void rms_norm_heads(Vec& x, uint32_t head_dim, const std::vector<float>& weight, double eps);

// Rotary embedding of one layer, as ggml_rope_ext: dimension pair i of a
// head turns by pos * freq_scale * base^(-2i/n_rot) / factors[i], cos and sin
// scaled by attn_factor. With YaRN (ext_factor != 0) the angle mixes in the
// unscaled (extrapolated) one by ramp(i) * ext_factor, the ramp falling from
// 1 to 0 between the correction dimensions of beta_fast and beta_slow, and
// cos and sin also scale by 1 + 0.1 ln(1 / freq_scale). Normal order pairs
// (2i, 2i+1); NeoX order pairs (i, i + n_rot/2).
struct Rope {
    uint32_t n_rot = 0;
    bool neox = false;
    double freq_base = 10000.0, freq_scale = 1.0, attn_factor = 1.0;
    const std::vector<float>* factors = nullptr;  // n_rot/2 divisors, or null
    double ext_factor = 0.0, beta_fast = 32.0, beta_slow = 1.0;
    uint32_t n_ctx_orig = 0;
    // M-RoPE (NeoX pairs): pair i belongs to section (i mod the sections'
    // sum) of t, h, w, extra; for text t = h = w = the position, extra 0.
    bool mrope = false;
    int sections[4] = {0, 0, 0, 0};
};
// The rope of `layer` (SWA layers may have their own base and scale), with
// the rope factors the fast path picks (Model::rope_params).
Rope layer_rope(const Input& in, uint32_t layer);
// Rotates every head of width `head_dim` in a row of heads.
void rope(Vec& x, uint32_t head_dim, int64_t pos, const Rope& r);

// Causal attention of every position over the keys it sees (all earlier
// positions, or the last n_swa on a sliding-window layer): scores scaled by
// hp.attention_scale, soft-capped by hp.attn_softcap, grouped-query heads,
// with one sink logit per query head in the softmax's denominator when
// `sinks` is given (gpt-oss). q, k, v: one row of heads per position, roped.
// Returns n_head * head_dim_v values per position.
Rows attention(const HParams& hp, uint32_t layer, const Rows& q, const Rows& k, const Rows& v,
               const std::vector<float>* sinks = nullptr);

// Q, K and V of one normed position: from attn_q/k/v, or split from the
// file's fused attn_qkv when it has one.
struct Qkv {
    Vec q, k, v;
};
struct QkvProjection {
    QkvProjection(const HParams& hp, const LayerWeights& lw);
    Qkv operator()(const Vec& h) const;

    const HParams& hp;
    std::vector<Linear> parts;  // {attn_qkv} or {attn_q, attn_k, attn_v}
};

// The attention of one layer over every position, before the output
// projection: Q, K, V of rms_norm(x) (attn_norm; x itself when the table
// loaded none, exaone4), an RMSNorm over each Q and K head when the table
// loaded attn_q_norm / attn_k_norm (qwen3, gemma3; over the whole Q and K
// vectors when the weights are that wide: olmoe), RoPE with the layer's
// parameters (none on the layers hp.nope_layers marks), then attention()
// (with the layer's attn_sinks when loaded).
Rows self_attention(const Input& in, uint32_t layer, const Rows& x);

// The mixture-of-experts feed-forward of one layer on one normed position
// (llama.cpp's build_moe_ffn with SwiGLU experts): router logits, gating
// (softmax / sigmoid / softmax over the selected), the top n_expert_used by
// score (plus the exp_probs_b selection bias when loaded; ties to the lower
// id; only from the best expert groups when there are groups), optional
// renormalisation and scale, then the weighted sum of the selected experts'
// act(gate h, up h) through down (gate and up from the fused gate_up when the
// file fuses them; silu(up h) without expert gates; act is
// hp.expert_activation: SwiGLU, or gpt-oss's clamped SwiGLU), each matrix
// times its per-expert `.scale` and plus its per-expert bias when the table
// loaded them. Experts are dequantised once, here. With latent_down (kimi-k3)
// the experts read latent_down h and their sum goes through latent_norm
// (when loaded) and latent_up; with hp.situ_beta every activation is situ.
struct MoeFfn {
    MoeFfn(const HParams& hp, const LayerWeights& lw);
    Vec operator()(const Vec& h) const;

    const HParams& hp;
    const LayerWeights& lw;
    Linear router;
    // One per expert; gate empty without expert gates; gate_up instead of
    // gate and up when the file fuses them.
    std::vector<Matrix> gate, up, gate_up, down;
    // Trained SwiGLU limits (bailingmoe3's swiglu_clamp_exp / _shexp of the
    // layer; 0: none): the experts' and the shared expert's activation
    // becomes limited_swiglu.
    double expert_limit = 0.0, shared_limit = 0.0;
};

double softcap(double x, double cap);  // tanh(x / cap) * cap; cap 0: x
double gelu_tanh(double x);            // GELU, tanh approximation (ggml_gelu)
double silu(double x);
// min(silu(g), limit) * clamp(u, -limit, limit); limit 0: silu(g) * u.
double limited_swiglu(double g, double u, double limit);
// Kimi-K3's situ: b tanh(g / b) sigmoid(g) * (bl > 0 ? bl tanh(u / bl) : u),
// b = hp.situ_beta, bl = hp.situ_linear_beta.
double situ(const HParams& hp, double g, double u);
Vec slice(const Vec& x, uint64_t first, uint64_t n);
void add_to(Vec& x, const Vec& y);  // x += y

// The token embeddings, times sqrt(n_embd) when `scale` (gemma) and
// hp.embedding_scale when set (granite). Throws
// cria::Error for a token outside the vocabulary.
Rows embed(const Input& in, bool scale);
// The final RMSNorm, the output projection (token_embd when tied), times
// hp.logit_multiplier, and the final soft cap, for every position.
Logits output_head(const Input& in, const Rows& x);

}  // namespace cria::model::reference
