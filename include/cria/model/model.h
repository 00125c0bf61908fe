#pragma once
// The fast forward pass of a dense transformer: weights viewed in place in
// the GGUF mapping, activations in a reusable workspace, every step an op of
// the backend-neutral op API (cria/ops/ops.h).
//
// The model knows nothing about how keys and values are kept between calls:
// attention goes through the AttentionMemory interface, which the runtime
// implements with its KV cache (cria/memory). That keeps the module order
// (model before memory) and lets tests plug in a trivial memory.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cria/cpu/features.h"
#include "cria/gguf/load_mode.h"
#include "cria/model/hparams.h"
#include "cria/ops/ops.h"

namespace cria::gguf {
class File;
}

namespace cria::model {

struct ArchDefinition;
class Model;
class TensorTable;

// The state a recurrent layer keeps for one sequence (HParams::is_recurrent):
// the convolution state of HParams::recurrent_conv_floats floats and the SSM
// / linear-attention state of HParams::recurrent_state_floats floats, both
// F32, zero for a sequence that has no history yet. The layer reads them at
// the start of the sequence's run of tokens and leaves the updated state there.
struct RecurrentState {
    float* conv = nullptr;
    float* ssm = nullptr;
};

// What the forward pass keeps between calls, seen from the model: attention
// layers store the keys and values of one micro-batch and attend over
// everything each token may see; recurrent layers read and update one state
// per sequence. Called once per layer, in layer order.
class AttentionMemory {
public:
    virtual ~AttentionMemory() = default;
    // q: F32 [head_dim, n_head, n_tokens] (roped), k: F32 [head_dim, n_head_kv,
    // n_tokens] (roped), v: F32 [head_dim_v, n_head_kv, n_tokens];
    // out: F32 [head_dim_v, n_head, n_tokens].
    virtual void attend(uint32_t layer, const ops::TensorView& q, const ops::TensorView& k,
                        const ops::TensorView& v, const ops::AttentionParams& params, const ops::TensorView& out) = 0;
    // The state of `seq` at recurrent layer `layer`. The default (a memory
    // without recurrent state) throws cria::Error.
    virtual RecurrentState recurrent_state(uint32_t layer, int32_t seq);
    // Called by a recurrent layer after it has advanced seq's state of
    // `layer` by the token at position pos, so that a speculative checkpoint
    // can restore the state after any accepted position
    // (memory::RecurrentMemory::record_position). The default throws cria::Error.
    virtual void record_position(uint32_t layer, int32_t seq, int32_t pos);
    // Whether record_position wants the state after every position of seq
    // now (a speculative checkpoint is open): then the layer advances the
    // state token by token; otherwise it may update it once per run. False
    // by default.
    virtual bool keeps_every_position(uint32_t layer, int32_t seq);
};

// A linear layer y = scale * (W x) + bias (or scale * (W x + bias)), as
// llama.cpp builds it: the matrix is a view into the file (or a packed copy);
// the optional per-output bias and the optional scalar `.scale` (NVFP4-style
// files; llama.cpp's saver writes one for every matrix) are applied only when
// the file has them and the architecture's graph uses them.
struct Linear {
    ops::TensorView w;
    std::vector<float> bias;  // empty: none
    float scale = 1.0f;
    bool has_scale = false;
    bool bias_before_scale = false;  // scale * (W x + bias): llama.cpp's feed-forward blocks

    bool present() const { return w.data != nullptr; }
    // Rows of the output (ne[1] of the matrix).
    int64_t n_out() const { return w.ne[1]; }
};

// The matrices of a layer's experts: one [k, rows] matrix per expert,
// stacked as GGUF's `*_exps` tensors ([k, rows, n_expert], a view into the
// file, or packed at load like the dense matrices: then expert e's packed
// matrix starts at w.row(0, e), nb[2] bytes apart) and the file's optional per-expert `.scale` (one
// multiplier of each expert's output), loaded when the architecture's graph
// applies it.
struct ExpertLinear {
    ops::TensorView w;
    std::vector<float> scale;  // n_expert values, or empty
    // Per-expert biases [rows, n_expert] (gpt-oss; ggml_add_id after the
    // scaled product), or empty.
    std::vector<float> bias;

    bool present() const { return w.data != nullptr; }
};

// The weights of a gated delta-net layer (qwen3next, qwen35): the
// projections of the normed input to [q; k; v] (attn_qkv), the output gate z
// (attn_gate), beta and the decay's alpha (qwen35: ssm_beta and ssm_alpha;
// qwen3next: ssm_ba, per key head r beta values then r alpha values), the
// causal convolution's taps over [q; k; v] ([conv_kernel, n_conv], F32), the
// decay's bias (ssm_dt.bias) and A (ssm_a, already -exp(A_log)), the gated
// RMSNorm of each value head (ssm_norm) and the output projection ssm_out.
struct DeltaNetWeights {
    Linear qkv, z, beta, alpha, ba, out;
    std::vector<float> conv, dt_bias, a, norm;
};

// The weights of a Kimi delta attention layer (kimi-linear, bailingmoe3):
// the projections of the normed input to q, k and v (attn_q/k/v), the taps
// of their three causal convolutions ([conv_kernel, n_value] each), the
// decay's projection (ssm_f_a, then ssm_f_b when the file has the low-rank
// pair), its bias (ssm_dt.bias) and per-head A (ssm_a), beta (ssm_beta), the
// output gate's projection (ssm_g_a, then ssm_g_b when low-rank), the
// RMSNorm of each head (ssm_norm) and the output projection (attn_output).
struct KdaWeights {
    Linear q, k, v, f_a, f_b, beta, g_a, g_b, out;
    std::vector<float> conv_q, conv_k, conv_v, dt_bias, a, norm;
};

// The weights of a state-space mixer (Mamba-1 and Mamba-2 layers): the input
// projection, the causal convolution ([K, channels] taps and bias), Mamba-1's
// ssm_x ([dt_r | B | C]) and ssm_dt projections, Mamba-2's dt bias, A
// (stored negative), D, Mamba-2's grouped output norm, Jamba's dt/B/C norms,
// and the output projection.
struct SsmWeights {
    Linear in, x, dt, out;
    std::vector<float> conv, conv_bias, dt_bias, a, d, norm;
    std::vector<float> dt_norm, b_norm, c_norm;
};

// The weights of one layer. Matrices are views into the file (no copies);
// small vectors (norms) are F32 copies so kernels can take float*. An
// architecture's tensor table (archs/*.cpp) says which of them it loads.
struct LayerWeights {
    std::vector<float> attn_norm, post_attn_norm, ffn_norm, post_ffn_norm;
    std::vector<float> q_norm, k_norm;
    // Encoders' post norms are LayerNorms: post_attn_norm (attn_output_norm)
    // and post_ffn_norm (layer_output_norm) with these biases.
    std::vector<float> post_attn_norm_bias, post_ffn_norm_bias;
    Linear wq, wk, wv, wqkv, wo;  // wqkv: the file's fused [q; k; v] (phi3), or joined at load
    // muse-glimmer: sigmoid(attn_gate h) gates the attention output channel by channel before wo.
    Linear attn_gate;
    // Attention sinks (gpt-oss, granite_swa): one learned logit per query head
    // that joins each softmax's normalisation and weighs no value. Empty: none.
    std::vector<float> attn_sinks;
    Linear gate, up, down;        // up holds [gate; up] when the file fuses them (phi3)
    // Joined at load time from separate matrices of the file (packed weights
    // only): wqkv.w = [wq; wk; wv] (then wq.w, wk.w, wv.w are empty; their
    // biases and scales stay, applied to each part) and gate_up.w = [gate; up].
    Linear gate_up;
    // Mixture of experts (instead of gate/up/down): the router and the experts.
    Linear gate_inp;                            // [n_embd, n_expert]
    std::vector<float> exp_probs_b;             // [n_expert] selection bias (exp_probs_b.bias), or empty
    ExpertLinear gate_exps, up_exps, down_exps;  // gate_exps may be absent (then silu(up))
    // Each expert's [gate; up] as one matrix, so one indexed product gives
    // both: either the file's own fused ffn_gate_up_exps (2 n_ff_exp rows per
    // expert, with its own scale and bias; gate_exps / up_exps absent), or
    // joined at load (packed weights only): then gate_exps.w and up_exps.w are
    // empty (their scales stay, applied to each half).
    ExpertLinear gate_up_exps;
    // The shared expert (HParams::n_ff_shexp > 0) and its optional scalar gate ([n_embd, 1]).
    Linear gate_inp_shexp, gate_shexp, up_shexp, down_shexp;
    // nemotron_h_moe: the experts may run in a latent space ([n_embd -> L], [L -> n_embd]).
    Linear latent_down, latent_up;
    std::vector<float> latent_norm;  // kimi-k3: RMSNorm of the experts' latent sum (ffn_routed_norm), or empty
    // kimi-k3's attention residuals: the score weights of the mixes before
    // the mixer and before the feed-forward block.
    std::vector<float> attn_res_score, ffn_res_score;
    DeltaNetWeights delta;  // a gated delta-net layer (HParams::is_delta_net)
    SsmWeights ssm;  // the state-space mixer of a recurrent layer
    KdaWeights kda;  // a Kimi delta attention layer (HParams::is_kda)
    // Multi-head latent attention (HParams::n_lora_kv > 0): Q from wq, or
    // from wq_a -> q_a_norm -> wq_b; [latent; roped key] from wkv_a_mqa, the
    // latent normed by kv_a_norm; then per head k_b [nope, n_lora_kv, n_head]
    // and v_b [n_lora_kv, head_dim_v_mla, n_head] (absorbed form: one matrix
    // per head, stacked, packed at load like experts), or wkv_b (plain form).
    Linear wq_a, wq_b, wkv_a_mqa, wkv_b;
    std::vector<float> q_a_norm, kv_a_norm;
    ops::TensorView k_b, v_b;
};

struct Weights {
    ops::TensorView token_embd;
    Linear output;  // output.w is token_embd when tied
    std::vector<float> output_norm;
    std::vector<float> output_res_score;  // kimi-k3: the mix before the output norm, or empty
    std::vector<float> rope_factors, rope_factors_long;  // empty when the model has none
    // Encoders (bert, nomic-bert): token_types (only row 0 is used: every token is
    // "sentence A", as llama.cpp), learned absolute positions (bert), the
    // embeddings' LayerNorm, and the classifier head of rank pooling (cls,
    // then tanh, then cls_output when present).
    std::vector<float> token_types;
    ops::TensorView pos_embd;
    std::vector<float> token_embd_norm, token_embd_norm_bias;
    Linear cls, cls_out;
    std::vector<LayerWeights> layers;
};

// The contiguous layers [begin, end) a model holds: all of them, or one
// stage of a pipeline split over processes (cria/runtime/pipeline.h). The
// first stage holds the embedding, the last the output head; a stage
// between them reads the residual stream the previous stage left and hands
// on its own.
struct LayerRange {
    uint32_t begin = 0;
    uint32_t end = UINT32_MAX;  // UINT32_MAX: to the last layer

    bool operator==(const LayerRange&) const = default;
};
class LoraSet;   // lora.h
class LoraRows;  // lora.h

// What one call of forward() computes.
struct ForwardInput {
    int64_t n_tokens = 0;
    const int32_t* tokens = nullptr;   // n_tokens ids, or null when embd is given
    const float* embd = nullptr;       // n_embd x n_tokens input embeddings (instead of tokens)
    const int32_t* positions = nullptr;
    // M-RoPE models: the four position streams, 4 x n_tokens ([section][token]:
    // temporal, height, width, extra), for image tokens; null: every token
    // rotates by (pos, pos, pos, 0), as text does.
    const int32_t* rope_positions = nullptr;
    // n_tokens sequence sets (bit s set: the token belongs to sequence s), so
    // layers that keep per-sequence state (recurrent) can find it; may be null.
    const uint64_t* seq_masks = nullptr;
    // Rows (indices into the micro-batch) whose logits / hidden states to return, in order.
    const int32_t* output_rows = nullptr;
    int64_t n_outputs = 0;
    bool want_logits = true;
    bool want_hidden = false;  // the final-normed hidden state of every output row
    bool long_rope = false;    // phi3: use the long rope factors (context beyond n_ctx_orig)
    // Residual-stream capture, for drafters that read the target's hidden
    // state (EAGLE-3, MTP, DFlash): the stream entering each listed layer (a
    // value of n_layer: after the last layer, before the output norm) is
    // written for every output row to `features` as [n_outputs][n_capture][n_embd],
    // during the forward pass itself (no second pass).
    const uint32_t* capture_layers = nullptr;
    size_t n_capture = 0;
    float* features = nullptr;
    // A pipeline stage after the first (Model::layers().begin > 0) starts
    // from this residual stream ([n_embd, n_tokens]) instead of the tokens;
    // a stage before the last leaves its stream in stream_out (same shape)
    // instead of computing logits or hidden states.
    const float* stream_in = nullptr;
    float* stream_out = nullptr;
    // LoRA adapters applied to the linear layers (lora.h); null: none. When
    // set, lora_applied (if not null) receives each adapted layer reached.
    const LoraSet* adapters = nullptr;
    std::vector<const Linear*>* lora_applied = nullptr;
    // Instead of `adapters`, rows under different sets: row r applies set
    // lora_row_set[r] of lora_rows (n_tokens indices), so requests with
    // different adapters or scales share one micro-batch.
    const LoraRows* lora_rows = nullptr;
    const uint8_t* lora_row_set = nullptr;
};

// Scratch space for the activations of up to n_max tokens, reused across
// calls so that decoding allocates nothing per token.
class Workspace {
public:
    // Sizes every buffer for n_tokens of `model` (widths from its tensor table).
    void reserve(const Model& model, int64_t n_tokens);
    int64_t capacity() const { return capacity_; }

    std::vector<float> x, h, q, k, v, qkv, attn, o, gate, up, ffn, out_rows;
    // Mixture of experts: router logits, expert weights and ids per token,
    // the experts' gate/up/activation ([n_ff_exp, k, n]) and outputs ([n_embd, k, n]).
    // expert_gate_up: [2 n_ff_exp, k, n], the output of the joined [gate; up] experts.
    std::vector<float> router, expert_weights, expert_gate, expert_up, expert_out, expert_gate_up;
    std::vector<int32_t> expert_ids;
    // Gated delta-net layers: [q; k; v] before and after the convolution,
    // z, beta and the log decay g per value head, the rule's output.
    std::vector<float> delta_qkv, delta_conv, delta_z, delta_beta, delta_g, delta_out;
    // Kimi delta attention layers: q, k, v (convolved in place), the decay
    // per key channel, the low-rank projections' middle, beta per head, the
    // output gate and the rule's output.
    std::vector<float> kda_q, kda_k, kda_v, kda_g, kda_low, kda_beta, kda_gate, kda_out;
    // State-space mixers: the input projection, the convolution's output,
    // Mamba-1's [dt_r | B | C], dt, the scan's output, and a copy of a
    // sequence's convolution state before the micro-batch (for checkpoints).
    std::vector<float> ssm_proj, ssm_conv, ssm_xdb, ssm_dt, ssm_y, ssm_conv_before;
    std::vector<int32_t> rope_positions;  // M-RoPE: the 4 position streams of the micro-batch
    // Multi-head latent attention: the low-rank query, the latent with the
    // roped key part, the per-head queries before absorption and the
    // per-head values after v_b.
    std::vector<float> mla_q_a, mla_kv, mla_q, mla_v;
    std::vector<float> mla_gate;  // the output gate's logits (attn_gate h), per head or per value channel
    // Routed experts in a latent width: the experts' input (latent_down h).
    std::vector<float> moe_latent;
    // Attention residuals: the layer input, the stream after the mixer, then
    // the banked layer inputs, [n_embd, n] each.
    std::vector<float> attn_res;
    std::vector<int32_t> mla_head_ids;  // head h for slot h of every token: the per-head indexed products

private:
    int64_t capacity_ = 0;
};

class Model {
public:
    // Opens `path` with the given load mode and views every weight in place.
    // With pack_weights, the weight matrices whose type the CPU's kernels
    // multiply faster in a packed layout (matmul/packing.h) are copied into
    // it once here (llama.cpp's "repack"); the rest stay views into the file.
    // Throws cria::Error for an unsupported or malformed model.
    // With a layer range (one stage of a pipeline), only the matrices of
    // those layers (and the output head's on the last stage) are packed or
    // read: the other layers' pages of the mapping are never touched, so a
    // stage's resident memory is about its share of the weights. Throws
    // cria::Error for an empty range or one beyond the model's layers.
    static std::unique_ptr<Model> load(const std::string& path, gguf::LoadMode mode = gguf::LoadMode::Auto,
                                       bool pack_weights = true, LayerRange layers = {});
    // Uses an already opened file (which must outlive the model).
    static std::unique_ptr<Model> from_file(std::shared_ptr<const gguf::File> file, bool pack_weights = true,
                                            LayerRange layers = {});

    const HParams& hparams() const { return hp_; }
    const gguf::File& file() const { return *file_; }
    // The linear layer whose matrix the file names `weight_name` (e.g.
    // blk.0.attn_q.weight), or null when no linear layer reads it (LoRA
    // adapters find their targets with it).
    const Linear* find_linear(std::string_view weight_name) const;
    const Weights& weights() const { return weights_; }
    // The layers this model computes ([0, n_layer) unless loaded as a pipeline stage).
    LayerRange layers() const { return layers_; }
    bool holds_all_layers() const { return layers_.begin == 0 && layers_.end == hp_.n_layer; }
    // Whether this stage computes with a weight (a field of weights()): its
    // layer is in layers(), or it is the output head and this is the last stage.
    bool computes_with(const void* weight_field) const { return !held_elsewhere(weight_field); }
    uint64_t n_params() const;
    uint64_t size_bytes() const;   // bytes of all tensors
    uint64_t packed_bytes() const { return packed_bytes_; }  // bytes of weights copied into packed layouts
    std::string description() const;  // "llama 1B Q4_0"-like, as llama-bench's model column

    // Runs the transformer over one micro-batch. logits: n_vocab x n_outputs
    // floats (when want_logits), hidden: n_embd x n_outputs (when want_hidden).
    void forward(ops::Ops& ops, Workspace& ws, const ForwardInput& in, AttentionMemory& memory, float* logits,
                 float* hidden) const;

    // Whether a context of n_ctx cells uses the long rope factors (phi3's
    // LongRoPE): model::long_rope_for_context (hparams.h).
    bool long_rope_for_context(uint32_t n_ctx) const;

    // The classifier head of rank pooling (rerankers; llama.cpp's
    // build_pooling RANK): scores = cls_out(tanh(cls x + b)) (+ b), each
    // part and bias optional (cls.output alone: cls_out x + b; without
    // cls.output the first n_cls_out values); x is one pooled row of n_embd
    // values, scores receives hp.n_cls_out values.
    // Throws cria::Error when the model has no classifier head.
    void classify(ops::Ops& ops, const float* x, float* scores) const;

    // Rope parameters of a layer (SWA layers may use their own base);
    // n_dims 0 for a layer that applies no rope (its keys never rotate).
    ops::RopeParams rope_params(uint32_t layer, bool long_rope) const;
    // The same rotation for moving cached keys by a position delta, with a
    // magnitude of 1: the keys already carry the attn_factor (and YaRN's
    // gain) of their first rotation. (llama.cpp's K-shift cancels YaRN's
    // gain for deepseek2 only and scales other families' keys by it again.)
    ops::RopeParams rope_shift_params(uint32_t layer, bool long_rope) const;

    // The widest output of a fused or joined product ([q; k; v], [gate; up]),
    // from the tensor table: the scratch those products are split from.
    int64_t widest_joined_output() const { return widest_joined_output_; }

private:
    Model() = default;
    // Replaces the matrices of `table` that `isa`'s kernels read faster
    // packed by packed copies, joining the table's groups where possible.
    void pack_weights(const TensorTable& table, cpu::Isa isa);
    // Whether a weight view belongs to a layer outside layers_ (or to the
    // output head of an earlier stage): such weights are never read here.
    bool held_elsewhere(const void* weight_field) const;
    std::shared_ptr<const gguf::File> file_;
    LayerRange layers_;
    HParams hp_;
    Weights weights_;
    std::vector<std::shared_ptr<void>> packed_storage_;  // the packed copies the views point into
    uint64_t packed_bytes_ = 0;
    const ArchDefinition* arch_ = nullptr;
    int64_t widest_joined_output_ = 0;
};

}  // namespace cria::model
