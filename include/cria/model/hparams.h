#pragma once
// Hyperparameters of a transformer model, read and validated in one place.
//
// Keys follow llama.cpp's naming ("<arch>.embedding_length", ...) and its
// semantics: optional keys, zeros meaning "not set", per-layer arrays. The
// keys every architecture has are read in hparams.cpp; each architecture's
// file (src/model/archs/) reads its own and sets the variant knobs below.
// Every value is checked (missing keys, zero sizes, heads that do not divide
// the width, ...) so that model code can trust them without checking again.

#include <cstdint>
#include <string>
#include <vector>

namespace cria::gguf {
class File;
}

namespace cria::model {

// How RoPE pairs the dimensions of a head: ggml's "normal" mode rotates
// adjacent pairs (x[2i], x[2i+1]); NeoX mode rotates (x[i], x[i + n_rot/2]).
// MRope (multi-section, qwen2-vl / GLM-4.5V): NeoX pairs whose positions
// come per section of rope_sections (t, h, w, extra); a text token has
// t = h = w = its position and extra = 0 (llama.cpp's text positions).
enum class RopeOrder { Normal, NeoX, MRope };

// The activation of the gated feed-forward block: SwiGLU (silu(gate) * up),
// GeGLU with GELU's tanh approximation (gelu(gate) * up), as ggml_gelu
// computes it, or gpt-oss's clamped SwiGLU (ggml_swiglu_oai with alpha 1.702
// and limit 7, as llama.cpp hard-codes them: min(g, 7) * sigmoid(1.702
// min(g, 7)) * (clamp(u, -7, 7) + 1)).
enum class FfnActivation { Silu, GeluTanh, SwigluOai };

// How a mixture-of-experts router turns its logits into expert weights
// (llama.cpp's expert_gating_func): softmax over all experts, sigmoid of
// each, or the raw logits with a softmax over the selected ones (gpt-oss).
enum class ExpertGating { Softmax, Sigmoid, SoftmaxWeight };

struct HParams {
    std::string arch_name;      // general.architecture (a registered architecture)

    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;   // context length the model was trained for
    uint32_t n_embd = 0;        // width of the residual stream
    uint32_t n_layer = 0;       // layers the forward pass runs (block_count less the MTP layers)
    uint32_t n_layer_nextn = 0; // MTP layers after them in the file (nextn_predict_layers): loaded, not run
    uint32_t n_head = 0;        // query heads
    uint32_t n_head_kv = 0;     // key/value heads (grouped-query attention when < n_head)
    uint32_t n_ff = 0;          // hidden width of the feed-forward block
    uint32_t head_dim = 0;      // width of one query/key head
    uint32_t head_dim_v = 0;    // width of one value head
    uint32_t n_rot = 0;         // rotated dimensions per head (<= head_dim)

    float norm_rms_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / linear rope scaling factor
    float rope_attn_factor = 1.0f; // scales cos/sin (LongRoPE's magnitude correction; with YaRN see below)
    // YaRN (rope.scaling.type "yarn", gpt-oss's files): ext_factor 1 mixes
    // each dimension pair's interpolated and extrapolated angle by a ramp
    // between the correction dimensions of beta_fast and beta_slow (of the
    // original context n_ctx_orig), as ggml's rope_yarn; 0 is plain rope.
    // With YaRN, rope_attn_factor is llama.cpp's yarn_attn_factor: the
    // file's attn_factor times (1 + 0.1 ln s) / (1 + 0.1 ln s), s = 1 /
    // rope_freq_scale (the op multiplies (1 + 0.1 ln s) back in).
    float rope_yarn_ext_factor = 0.0f;
    float rope_yarn_beta_fast = 32.0f;
    float rope_yarn_beta_slow = 1.0f;
    RopeOrder rope_order = RopeOrder::Normal;
    int rope_sections[4] = {0, 0, 0, 0};  // MRope: pairs per position kind (t, h, w, extra)
    // Per-dimension divisors of the rope frequencies (n_rot/2 values), from
    // rope_freqs.weight (Llama 3.1 scaling) or phi3's rope_factors_short/long.
    // Empty when the model has none. Which phi3 set applies depends on the
    // context size, so the runtime picks; this names the tensor to use for
    // contexts up to n_ctx_orig.
    std::string rope_factors_tensor;
    std::string rope_factors_long_tensor;  // phi3: for contexts beyond n_ctx_orig
    uint32_t n_ctx_orig = 0;               // rope.scaling.original_context_length (0: n_ctx_train)

    // Sliding-window attention: a query at position p sees keys at q with
    // p - q < n_swa on the layers marked in swa_layers (llama.cpp's
    // LLAMA_SWA_TYPE_STANDARD). Those layers may use their own rope base.
    uint32_t n_swa = 0;
    std::vector<bool> swa_layers;          // n_layer entries; all false without SWA
    float rope_freq_base_swa = 10000.0f;
    float rope_freq_scale_swa = 1.0f;

    float attention_scale = 0.0f;  // multiplies Q before the dot products (1/sqrt(head_dim) unless the arch says)
    float attn_softcap = 0.0f;     // gemma2: scores -> tanh(s / c) * c; 0 = off
    float final_softcap = 0.0f;    // gemma2: logits -> tanh(l / c) * c; 0 = off
    bool scale_embeddings = false; // gemma: token embeddings times sqrt(n_embd)
    // granite: token embeddings times embedding_scale, each block's output
    // times residual_scale before its residual add, logits times
    // logit_multiplier (1 / logit_scale). 0 (embedding, residual) and 1: off.
    float embedding_scale = 0.0f;
    float residual_scale = 0.0f;
    float logit_multiplier = 1.0f;
    // minimax-01: each block's residual is this times the block's normed
    // input (x <- block(u) + alpha u, u = rms_norm(x)), the stream itself
    // dropped (its residual_scale key). 0: the usual x += block.
    float normed_input_residual = 0.0f;
    // Layers that apply no rotary embedding (smollm3's every fourth layer,
    // exaone4's full-attention layers, granite without rope): n_layer
    // entries, all false when every layer uses rope.
    std::vector<bool> nope_layers;
    bool has_post_norms = false;   // gemma2/3: RMSNorm after attention and after the FFN, before the residual add
    float post_norm_eps = 0.0f;    // epsilon of those post norms (0: norm_rms_eps; muse-glimmer: 1e-8)
    FfnActivation ffn_activation = FfnActivation::Silu;

    // Mixture of experts (n_expert > 0; only architectures that declare
    // support for experts accept it): each token's feed-forward block is the
    // weighted sum of n_expert_used of n_expert SwiGLU experts of width
    // n_ff_exp, picked by a router (ffn_gate_inp). Routing as llama.cpp's
    // build_moe_ffn: gating, optional renormalisation of the k weights, and a
    // scale (0: not set).
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_exp = 0;
    ExpertGating expert_gating = ExpertGating::Softmax;
    bool expert_weights_norm = false;
    float expert_weights_scale = 0.0f;
    // A shared expert beside the routed ones (qwen2moe): a SwiGLU block of
    // width n_ff_shexp that every token goes through, its output times
    // sigmoid(ffn_gate_inp_shexp · h) when the file has that gate. 0: none.
    uint32_t n_ff_shexp = 0;
    // The activation of the experts (gpt-oss: SwigluOai).
    FfnActivation expert_activation = FfnActivation::Silu;
    // The first n_layer_dense_lead layers keep a dense feed-forward block
    // (leading_dense_block_count); the others are mixtures of experts.
    uint32_t n_layer_dense_lead = 0;
    // The experts' gate and up matrices come fused as ffn_gate_up_exps
    // ([gate; up], 2 n_ff_exp rows per expert), from the file's tensors.
    bool fused_gate_up_exps = false;
    // Expert groups (expert_group_count > 1, DeepSeek-V3): only the experts
    // of the expert_group_used best groups are candidates (ops::MoeRouteParams).
    uint32_t expert_group_count = 0;
    uint32_t expert_group_used = 0;

    // Multi-head latent attention (deepseek2; n_lora_kv > 0): queries from
    // attn_q or the low-rank attn_q_a -> attn_q_a_norm -> attn_q_b (n_lora_q),
    // keys and values from one compressed latent of n_lora_kv values plus a
    // roped key part of n_rot values shared by all heads. Per head the query
    // and key are head_dim_mla wide (head_dim_mla - n_rot unroped, then n_rot
    // roped) and the value head_dim_v_mla. In the absorbed form (mla_absorbed:
    // the file has attn_k_b / attn_v_b) the cache holds the latent and the
    // roped part, one KV head of head_dim = n_lora_kv + n_rot whose first
    // head_dim_v = n_lora_kv values are also the value (value_in_key); in the
    // plain form (attn_kv_b) head_dim = head_dim_mla, head_dim_v =
    // head_dim_v_mla and every head has its own keys and values.
    uint32_t n_lora_q = 0;
    uint32_t n_lora_kv = 0;
    uint32_t head_dim_mla = 0;
    uint32_t head_dim_v_mla = 0;
    bool mla_absorbed = false;
    // The cache keeps no values: a token's value is the first head_dim_v
    // values of its key (absorbed MLA's latent).
    bool value_in_key = false;

    // Gated DeltaNet layers (qwen3next, qwen35, qwen35moe; llama.cpp's ssm.*
    // keys as its delta-net graph reads them). The other layers are gated
    // attention (attn_output_gate).
    struct DeltaNet {
        uint32_t conv_kernel = 0;    // ssm.conv_kernel: taps of the causal convolution over [q; k; v]
        uint32_t head_dim = 0;       // ssm.state_size: width of a key head and of a value head
        uint32_t n_k_heads = 0;      // ssm.group_count
        uint32_t n_v_heads = 0;      // ssm.time_step_rank (a multiple of n_k_heads)
        // Which key head value head h reads: h / (n_v / n_k) (qwen3next,
        // repeat_interleave) or h % n_k (qwen35: the converter tiles the heads).
        bool grouped_heads = false;
        std::vector<bool> layers;    // n_layer entries: true for a delta-net layer

        uint32_t n_key() const { return n_k_heads * head_dim; }
        uint32_t n_value() const { return n_v_heads * head_dim; }
        uint32_t n_conv() const { return 2 * n_key() + n_value(); }  // channels of [q; k; v]
        // Floats of one sequence's state per layer: the convolution's last
        // inputs, and the d x d matrix of every value head.
        uint64_t conv_state_floats() const { return uint64_t{conv_kernel - 1} * n_conv(); }
        uint64_t matrix_state_floats() const { return uint64_t{head_dim} * head_dim * n_v_heads; }
    };
    DeltaNet delta_net;
    // Kimi delta attention layers (kimi-linear, bailingmoe3: their recurrent
    // layers, HParams::recurrent_layers): n_heads heads of head_dim key and
    // value channels (kda.head_dim), separate causal convolutions of
    // conv_kernel taps over q, k and v, and a decay per key channel.
    struct Kda {
        uint32_t conv_kernel = 0;
        uint32_t head_dim = 0;
        uint32_t n_heads = 0;
        // The decay's form: 0 (kimi-linear), g = A softplus(a); negative
        // (bailingmoe3's kda.gate_lower_bound), g = lb sigmoid(A a). a is the
        // gate projection plus ssm_dt.bias, A the head's ssm_a.
        float gate_lower_bound = 0.0f;
        // kimi-k3's bounded decay reads -A (exp(A_log)): lb sigmoid(-A a).
        bool gate_negates_a = false;

        uint32_t n_value() const { return n_heads * head_dim; }
        // Floats of one sequence's state per layer: the three convolutions'
        // last inputs ([q | k | v], llama.cpp's layout), and the d x d matrix of every head.
        uint64_t conv_state_floats() const { return 3 * uint64_t{conv_kernel - 1} * n_value(); }
        uint64_t matrix_state_floats() const { return uint64_t{head_dim} * head_dim * n_heads; }
    };
    Kda kda;
    // Trained SwiGLU limits per layer (bailingmoe3's swiglu_clamp_exp /
    // swiglu_clamp_shexp; empty or 0: none): with a limit L the activation is
    // min(silu(gate), L) * clamp(up, -L, L). The experts use the first, every
    // other SwiGLU block of the layer (shared expert, dense FFN) the second.
    std::vector<float> swiglu_clamp_exp, swiglu_clamp_shexp;
    // Kimi-K3's situ activation in place of SwiGLU in every feed-forward
    // block (situ_beta > 0; 0: SwiGLU): situ(g, u) = b tanh(g / b) sigmoid(g)
    // * (bl > 0 ? bl tanh(u / bl) : u), b = situ_beta, bl = situ_linear_beta.
    float situ_beta = 0.0f, situ_linear_beta = 0.0f;
    // Kimi-K3's attention residuals across layers (attn_res.block_size B; 0:
    // a plain residual stream): every B-th layer banks its input and
    // restarts the stream; blocks read a softmax-weighted mix of the banked
    // inputs and the stream (archs/kimi_k3.cpp).
    uint32_t attn_res_block_size = 0;
    // Routed experts that run in a latent width (expert_latent_length; 0:
    // n_embd): the experts read latent_down h, their weighted sum goes
    // through the optional latent norm and latent_up.
    uint32_t n_expert_latent = 0;
    // Gated attention (qwen3next, qwen35): attn_q gives per head head_dim
    // query values then head_dim gate values; the attention output is
    // multiplied by sigmoid(gate) before attn_output.
    bool attn_output_gate = false;
    // Recurrent layers (mamba, the hybrids): n_layer entries, true for a
    // layer whose mixer keeps a per-sequence state instead of a KV cache;
    // empty (or all false) for a pure transformer. Every recurrent layer
    // keeps recurrent_conv_floats floats of convolution state and
    // recurrent_state_floats floats of SSM / linear-attention state per
    // sequence (llama.cpp's n_embd_r and n_embd_s).
    std::vector<bool> recurrent_layers;
    // falcon-h1: every recurrent layer also has attention in parallel with
    // its mixer, so it keeps a KV cache beside its recurrent state.
    bool recurrent_with_attention = false;
    uint32_t recurrent_conv_floats = 0;
    uint32_t recurrent_state_floats = 0;
    // State-space layers (mamba, mamba2 and the hybrids' SSM layers; llama.cpp's
    // ssm_d_conv, ssm_d_inner, ssm_d_state, ssm_dt_rank, ssm_n_group): the
    // convolution's taps, the inner width, the state per channel, the dt rank
    // (Mamba-1) or number of heads (Mamba-2), the B/C groups (Mamba-2), and
    // whether dt, B and C are RMS-normed without weight (FalconMamba).
    uint32_t ssm_conv_kernel = 0;
    uint32_t ssm_inner = 0;
    uint32_t ssm_state = 0;
    uint32_t ssm_dt_rank = 0;
    uint32_t ssm_groups = 0;
    bool ssm_dt_b_c_rms = false;

    bool has_qk_norm = false;    // qwen3, gemma3: RMSNorm over each Q and K head
    bool fused_qkv = false;      // the file has one attn_qkv matrix instead of attn_q/k/v (phi3)
    bool fused_gate_up = false;  // phi3: ffn_up holds [gate; up] (2 * n_ff rows), no ffn_gate
    bool tied_output = false;    // output projection shares the token embedding

    // Encoders (bert, nomic-bert): attention both ways over the whole batch
    // (attention.causal false), no output head (the model's output is the
    // final hidden state of every token), the pooling the file asks for
    // (pooling_type: llama.cpp's -1 unspecified, 0 none, 1 mean, 2 cls,
    // 3 last, 4 rank), norm_eps of their LayerNorms (attention.layer_norm_epsilon),
    // the rows of token_types (tokenizer.ggml.token_type_count) and the
    // classifier head's outputs (classifier.output_labels, else 1).
    bool causal_attn = true;
    bool is_encoder = false;
    int32_t pooling_type = -1;
    float norm_eps = 1e-12f;
    uint32_t n_token_types = 0;
    uint32_t n_cls_out = 1;

    bool is_moe(uint32_t layer) const { return n_expert > 0 && layer >= n_layer_dense_lead; }
    bool is_kda(uint32_t layer) const { return kda.head_dim > 0 && is_recurrent(layer); }
    bool is_delta_net(uint32_t layer) const { return layer < delta_net.layers.size() && delta_net.layers[layer]; }
    bool is_recurrent(uint32_t layer) const { return layer < recurrent_layers.size() && recurrent_layers[layer]; }
    // Whether the layer attends over a KV cache (also a recurrent one under recurrent_with_attention).
    bool has_attention(uint32_t layer) const { return !is_recurrent(layer) || recurrent_with_attention; }
    bool has_recurrent_layers() const {
        for (bool r : recurrent_layers)
            if (r) return true;
        return false;
    }
    bool is_swa(uint32_t layer) const { return layer < swa_layers.size() && swa_layers[layer]; }
    bool uses_rope(uint32_t layer) const { return layer >= nope_layers.size() || !nope_layers[layer]; }
    uint32_t n_gqa() const { return n_head_kv == 0 ? 0 : n_head / n_head_kv; }
    uint32_t n_embd_q() const { return n_head * head_dim; }
    uint32_t n_embd_k() const { return n_head_kv * head_dim; }
    uint32_t n_embd_v() const { return n_head_kv * head_dim_v; }
};

// Reads and validates the hyperparameters of `file`. Throws cria::Error naming
// the file and the key for anything missing, inconsistent or unsupported
// (including an architecture that is not registered).
HParams read_hparams(const gguf::File& file);

// llama.cpp's set_swa_pattern(n): of every n layers the first n-1 use the
// sliding window and the last attends globally (n = 0: all layers; n = 1: none).
std::vector<bool> swa_pattern(uint32_t n_layer, uint32_t period);

// Whether a context of n_ctx cells uses the long rope factors (phi3's
// LongRoPE): when it exceeds the original context, with n_ctx first rounded
// up to a multiple of 256 as llama.cpp pads every context, so that the same
// -c picks the same factors in both engines.
bool long_rope_for_context(const HParams& hp, uint32_t n_ctx);

// The registered architectures (general.architecture names), in order.
std::vector<std::string> supported_architectures();
// Whether `name` is registered and accepts files with experts (expert_count > 0).
bool architecture_supports_experts(const std::string& name);

}  // namespace cria::model
