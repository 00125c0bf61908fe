#pragma once
// The operations model code calls, eagerly, one after the other. `Ops` is the
// backend-neutral interface; CpuOps (cpu_ops.h) implements it on the CPU with
// the cria_cpu thread pool, and other backends (CUDA) implement the same calls
// with tensors in their own memory, so model code never changes.
//
// Shapes follow ggml's convention: ne[0] is the innermost dimension. Unless an
// op says otherwise, activations are F32, `out` has the shape the op documents
// and may alias the input of element-wise ops. Every op checks types and shapes
// and throws cria::Error on a mismatch.

#include <cstdint>
#include <utility>
#include <vector>

#include "cria/ops/tensor.h"

namespace cria::ops {

enum class RopeOrder {
    Normal,  // rotates pairs (x[2i], x[2i+1]) (llama, GGML_ROPE_TYPE_NORMAL)
    NeoX,    // rotates pairs (x[i], x[i + n_dims/2]) (GPT-NeoX, qwen, ...)
    MRope,   // multi-section: NeoX pairs, position per section (qwen2-vl)
};

struct RopeParams {
    int n_dims = 0;               // rotated dimensions (<= head size; the rest is copied)
    RopeOrder order = RopeOrder::Normal;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;      // 1 / context scaling factor (linear / YaRN)
    int n_ctx_orig = 0;           // training context, for YaRN's correction dims
    float ext_factor = 0.0f;      // YaRN extrapolation mix (0 disables YaRN)
    float attn_factor = 1.0f;     // magnitude scale of cos/sin
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    const float* freq_factors = nullptr;  // n_dims/2 divisors of theta (llama3 / longrope), or null
    int sections[4] = {0, 0, 0, 0};       // MRope: dims (in pairs) for t, h, w, extra positions
};

// Frequency factors for llama3 rope scaling ("rope_freqs"), computed the way
// the Llama 3.1 reference does; pass the result as RopeParams::freq_factors.
std::vector<float> llama3_frequency_factors(int n_dims, float freq_base, float factor, float low_freq_factor,
                                            float high_freq_factor, int original_context);

struct SoftmaxParams {
    float scale = 1.0f;          // applied to x first
    float softcap = 0.0f;        // > 0: x = softcap * tanh(x / softcap) after scaling
    const TensorView* mask = nullptr;  // F32 or F16 [>= n, rows...]; row i1 uses mask row i1 % mask.ne[1]
    float max_bias = 0.0f;       // > 0: ALiBi, mask scaled by a per-head (i2) slope
    const float* sinks = nullptr;  // one logit per head (i2) that joins the normalisation only
};

struct AttentionParams {
    float scale = 1.0f;          // usually 1/sqrt(head_dim)
    bool causal = true;          // key j is visible to a query at position p when j <= p
    int64_t window = 0;          // > 0: also only when p - j < window (sliding window)
    float softcap = 0.0f;        // > 0: scores = softcap * tanh(scores / softcap)
    const float* sinks = nullptr;  // one logit per query head, joins the normalisation only
    const int32_t* positions = nullptr;  // position of each query token (null: n_kv - n_tokens + t)
};

// Mixture-of-experts routing (llama.cpp's build_moe_ffn, steps 2-8): from
// the router logits of each token, the ids of the experts it uses and the
// weight of each. Gating: Softmax (pi = softmax(l) over all experts), Sigmoid
// (pi = sigmoid(l)), SoftmaxWeight (pi = l; the weights are the softmax over
// the k selected, gpt-oss). Selection is by pi + selection_bias (the bias
// never reaches the weights); the top k in descending order, ties to the
// lower expert id (llama.cpp's argsort leaves tie order unspecified).
// Expert groups (DeepSeek-V3): with group_count > 1 the experts form that
// many consecutive groups; a group's score is the sum of its two best
// selection scores, only the group_used best groups (ties to the lower
// group) keep their experts, the others' scores become -inf before the top k
// (llama.cpp always sums the top two, whatever DeepSeek-V2's reference did).
enum class MoeGating { Softmax, Sigmoid, SoftmaxWeight };

struct MoeRouteParams {
    int64_t n_used = 0;                     // k experts per token (1 <= k <= n_expert)
    MoeGating gating = MoeGating::Softmax;
    bool norm_weights = false;              // w /= max(sum w, 6.103515625e-5)
    float weights_scale = 0.0f;             // w *= scale unless it is 0 ("not set") or 1
    const float* selection_bias = nullptr;  // n_expert values added for selection only (exp_probs_b), or null
    uint32_t group_count = 0;               // expert groups (0 or 1: none); must divide n_expert, >= 2 experts each
    uint32_t group_used = 0;                // groups kept per token, in [1, group_count] when there are groups
};

// The gated delta rule (ggml_gated_delta_net with one scalar gate per head:
// Gated DeltaNet). Per value head h the state is a d x d matrix M (key index
// i, value index j, stored at j * d + i: the key index fastest, as ggml's op).
// Per token t, with the key head that h reads:
//   M <- exp(g_t) M;  u = M^T k;  M += k (beta_t (v - u))^T;  o = scale M^T q.
// Which key head a value head reads: Tiled h % H_k (ggml's op, qwen35) or
// Grouped h / (H_v / H_k) (qwen3next's repeat_interleave).
enum class DeltaHeadMap { Tiled, Grouped };
// The recurrent form walks the tokens one by one; the chunked form does the
// same in chunks of 64 tokens with products of whole chunks (an exact
// reformulation, equal within float rounding). Auto: chunked for prompts.
enum class DeltaForm { Auto, Recurrent, Chunked };

struct GatedDeltaParams {
    float scale = 1.0f;  // usually 1 / sqrt(d)
    DeltaHeadMap head_map = DeltaHeadMap::Tiled;
    DeltaForm form = DeltaForm::Auto;
};

// Lightning attention (MiniMax-01's linear attention with a constant decay
// per head): per head h a d x d state M (key index i, value index j, stored
// at j * d + i, as gated_delta_net) and a decay gamma_h = exp(-rate_h). Per
// token t: M <- gamma_h M + k_t v_t^T;  o_t = M^T q_t (no score scaling).
// The recurrent form walks the tokens one by one; the blocked form takes
// blocks of 64 tokens with products of whole blocks,
//   o_t = gamma^(t+1) M^T q_t + sum_{s <= t} gamma^(t-s) (q_t . k_s) v_s,
//   M' = gamma^T M + sum_s gamma^(T-1-s) k_s v_s^T,
// an exact reformulation, equal within float rounding. Auto: blocked for prompts.
enum class LightningForm { Auto, Recurrent, Blocked };

struct LightningParams {
    const float* rates = nullptr;  // one decay rate (>= 0) per head
    LightningForm form = LightningForm::Auto;
};

// The selective scan of state-space models (ggml_ssm_scan), one sequence:
// n_head heads of head_dim channels, each channel with a state of n_state
// values; heads use the B/C group h / (n_head / n_group) (heads grouped
// contiguously). Mamba-1 is head_dim 1, n_head = d_inner, one group and a
// per-element A ([n_state, n_head]); Mamba-2 has a scalar A per head.
struct SsmScanParams {
    int64_t n_state = 0;  // N
    int64_t head_dim = 0; // P
    int64_t n_head = 0;   // H
    int64_t n_group = 1;  // G (divides H)
    bool scalar_a = false;  // A is [n_head] (Mamba-2) instead of [n_state, n_head] (Mamba-1)
};

class Ops {
public:
    virtual ~Ops() = default;

    // out[:, i] = table row ids[i], converted to F32. table: any type the
    // quant module can dequantize, [ne0, rows]; out: F32 [ne0, n_ids].
    virtual void get_rows(const TensorView& table, const int32_t* ids, int64_t n_ids, const TensorView& out) = 0;

    // Writes the F32 rows of `src` into `dst` converted to dst's type (F32,
    // F16, BF16 or any type the quant module can quantize; for the KV cache).
    // Shapes must match; dst rows may be strided (a slice of a larger cache).
    virtual void convert(const TensorView& src, const TensorView& dst) = 0;

    // y = x / sqrt(mean(x^2) + eps) * weight (weight F32 [ne0] or null).
    virtual void rms_norm(const TensorView& x, const float* weight, float eps, const TensorView& out) = 0;
    // y = (x - mean) / sqrt(var + eps) * weight + bias (either may be null).
    virtual void layer_norm(const TensorView& x, const float* weight, const float* bias, float eps,
                            const TensorView& out) = 0;

    // x: F32 [head_dim, n_heads, n_tokens]; positions: n_tokens values
    // (MRope: 4 * n_tokens, all t positions, then all h, w, extra).
    virtual void rope(const TensorView& x, const int32_t* positions, const RopeParams& params,
                      const TensorView& out) = 0;

    // Softmax over each row of x (F32 [n, rows, heads, ...]).
    virtual void softmax(const TensorView& x, const SoftmaxParams& params, const TensorView& out) = 0;

    virtual void silu(const TensorView& x, const TensorView& out) = 0;
    virtual void gelu(const TensorView& x, const TensorView& out) = 0;      // tanh approximation
    virtual void gelu_erf(const TensorView& x, const TensorView& out) = 0;  // exact (erf)
    virtual void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out) = 0;  // silu(g) * u
    virtual void geglu(const TensorView& gate, const TensorView& up, const TensorView& out) = 0;   // gelu(g) * u
    // gpt-oss's clamped SwiGLU (ggml_swiglu_oai): x = min(g, limit), y =
    // clamp(u, -limit, limit), out = x * sigmoid(alpha * x) * (y + 1).
    virtual void swiglu_oai(const TensorView& gate, const TensorView& up, float alpha, float limit,
                            const TensorView& out) = 0;

    // Element-wise; b broadcasts over rows when it has one row of ne0 values.
    virtual void add(const TensorView& a, const TensorView& b, const TensorView& out) = 0;
    virtual void mul(const TensorView& a, const TensorView& b, const TensorView& out) = 0;
    virtual void scale(const TensorView& x, float s, const TensorView& out) = 0;

    // Index of the largest value in a row (lowest index on ties; NaN never wins).
    virtual int64_t argmax(const TensorView& row) = 0;
    // The k largest (index, value) pairs of a row, largest first, ties by index.
    virtual std::vector<std::pair<int32_t, float>> top_k(const TensorView& row, int64_t k) = 0;

    // Attention of queries q (F32 [head_dim, n_heads, n_tokens]) over a cache
    // k ([head_dim, n_kv_heads, n_kv]) and v ([head_dim_v, n_kv_heads, n_kv])
    // stored as F32, F16, BF16, Q8_0 or Q4_0; n_heads must be a multiple of
    // n_kv_heads (grouped-query). out: F32 [head_dim_v, n_heads, n_tokens].
    virtual void attention(const TensorView& q, const TensorView& k, const TensorView& v,
                           const AttentionParams& params, const TensorView& out) = 0;

    // out = W x: W [k, rows] of any weight type the matmul module supports,
    // x F32 [k, n], out F32 [rows, n].
    virtual void matmul(const TensorView& w, const TensorView& x, const TensorView& out) = 0;
    // out = W swiglu(gate, up): the same bits as swiglu into a buffer, then
    // matmul of that buffer, without the buffer (the activation is computed
    // row by row as the product reads it). gate and up F32 [k, n] with the
    // same row stride (they may be the two halves of one joined output).
    virtual void matmul_swiglu(const TensorView& w, const TensorView& gate, const TensorView& up,
                               const TensorView& out) = 0;

    // Top-k expert routing (MoeRouteParams above). logits: F32 [n_expert,
    // n_tokens]; ids: n_used * n_tokens expert ids, token-major (ids[t *
    // n_used + j] is token t's rank-j expert); weights: F32 [n_used, n_tokens].
    virtual void moe_route(const TensorView& logits, const MoeRouteParams& params, int32_t* ids,
                           const TensorView& weights) = 0;

    // The indexed product of the experts (ggml_mul_mat_id): w holds one
    // matrix per expert, [k, rows, n_expert] of any type matmul supports; x is
    // F32 [k, n_x, n_tokens] with n_x 1 (every slot reads the token's vector)
    // or n_used (slot j reads its own); ids as moe_route writes them (n_used
    // per token). out: F32 [rows, n_used, n_tokens] with out[:, j, t] =
    // w[:, :, ids[t * n_used + j]] x[:, j % n_x, t].
    virtual void matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                           const TensorView& out) = 0;

    // The gated delta rule (GatedDeltaParams above) over the tokens of one
    // sequence. q, k: F32 [d, H_k, T]; v and out: F32 [d, H_v, T] (H_v a
    // multiple of H_k); g (log decay, <= 0) and beta: F32 [H_v, T]; state:
    // F32 [d * d, H_v], the state before the first token, replaced by the
    // state after the last.
    virtual void gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                                 const TensorView& beta, const TensorView& state, const GatedDeltaParams& params,
                                 const TensorView& out) = 0;

    // Lightning attention (LightningParams above) over the tokens of one
    // sequence. q, k, v and out: F32 [d, H, T] (rows of d contiguous floats,
    // any row strides); state: F32 [d * d, H], the state before the first
    // token, replaced by the state after the last.
    virtual void lightning_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                     const TensorView& state, const LightningParams& params,
                                     const TensorView& out) = 0;
    // Kimi delta attention (KDA: ggml_gated_delta_net with a gate per key
    // channel). As gated_delta_net, except that g is F32 [d, H_v, T], one log
    // decay (<= 0) per key channel, and the decay scales each key row of M:
    //   M[i][.] <- exp(g_t[i]) M[i][.];  u = M^T k;  M += k (beta_t (v - u))^T;  o = scale M^T q.
    // params.form: the recurrent form walks the tokens one by one; the
    // chunked form (Auto for prompts) does chunks of tokens with products
    // of whole chunks, equal within float rounding.
    virtual void kimi_delta_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                      const TensorView& g, const TensorView& beta, const TensorView& state,
                                      const GatedDeltaParams& params, const TensorView& out) = 0;

    // Causal depthwise convolution with state (ggml_ssm_conv), one sequence:
    // x F32 [C, T] (rows may be strided), weight F32 [K, C] (channel c's taps
    // at c*K, tap K-1 on the current token), state F32 [K-1, C] (channel c's
    // K-1 previous inputs at c*(K-1), oldest first; updated in place to the
    // last K-1 inputs of [state | x]). out F32 [C, T] (may be x itself):
    // out[c, t] = sum_i weight[c*K + i] * X_c[t + i], X_c = [state_c | x_c].
    virtual void ssm_conv(const TensorView& x, const float* weight, int64_t kernel, float* state,
                          const TensorView& out) = 0;

    // Selective scan (SsmScanParams above), one sequence of T tokens: x F32
    // [P*H, T], dt F32 [H, T] (before softplus, bias included), A F32 (see
    // scalar_a), B and C F32 [N*G, T] (rows may be strided), state F32
    // [N, P, H] ((h*P + p)*N + n), updated in place; y F32 [P*H, T]. Per token
    // and head: d = softplus(dt), s = s * exp(d*A) + B * (x*d), y = sum_n s*C.
    // The D skip is not included.
    virtual void ssm_scan(const TensorView& x, const TensorView& dt, const float* a, const TensorView& b,
                          const TensorView& c, const SsmScanParams& params, float* state, const TensorView& y) = 0;
};

}  // namespace cria::ops
