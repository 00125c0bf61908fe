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
#include <vector>

#include "cria/cpu/features.h"
#include "cria/gguf/load_mode.h"
#include "cria/model/hparams.h"
#include "cria/ops/ops.h"

namespace cria::gguf {
class File;
}

namespace cria::model {

// Stores the keys and values of one micro-batch and attends over everything
// each token may see. Called once per layer, in layer order.
class AttentionMemory {
public:
    virtual ~AttentionMemory() = default;
    // q: F32 [head_dim, n_head, n_tokens] (roped), k: F32 [head_dim, n_head_kv,
    // n_tokens] (roped), v: F32 [head_dim_v, n_head_kv, n_tokens];
    // out: F32 [head_dim_v, n_head, n_tokens].
    virtual void attend(uint32_t layer, const ops::TensorView& q, const ops::TensorView& k,
                        const ops::TensorView& v, const ops::AttentionParams& params, const ops::TensorView& out) = 0;
};

// The weights of one layer. Matrices are views into the file (no copies);
// small vectors (norms, biases) are F32 copies so kernels can take float*.
struct LayerWeights {
    std::vector<float> attn_norm, post_attn_norm, ffn_norm, post_ffn_norm;
    std::vector<float> q_bias, k_bias, v_bias, q_norm, k_norm;
    ops::TensorView wq, wk, wv, wqkv, wo;  // wqkv used when hparams.fused_qkv
    ops::TensorView gate, up, down;        // up holds [gate; up] when hparams.fused_gate_up
    // Joined at load time from separate matrices of the file (packed weights
    // only): wqkv = [wq; wk; wv] (then wq, wk, wv are empty) and
    // gate_up = [gate; up] (then gate and up are empty).
    ops::TensorView gate_up;
};

struct Weights {
    ops::TensorView token_embd;
    ops::TensorView output;  // token_embd when tied
    std::vector<float> output_norm;
    std::vector<float> rope_factors, rope_factors_long;  // empty when the model has none
    std::vector<LayerWeights> layers;
};

// What one call of forward() computes.
struct ForwardInput {
    int64_t n_tokens = 0;
    const int32_t* tokens = nullptr;   // n_tokens ids, or null when embd is given
    const float* embd = nullptr;       // n_embd x n_tokens input embeddings (instead of tokens)
    const int32_t* positions = nullptr;
    // n_tokens sequence sets (bit s set: the token belongs to sequence s), so
    // layers that keep per-sequence state (recurrent) can find it; may be null.
    const uint64_t* seq_masks = nullptr;
    // Rows (indices into the micro-batch) whose logits / hidden states to return, in order.
    const int32_t* output_rows = nullptr;
    int64_t n_outputs = 0;
    bool want_logits = true;
    bool want_hidden = false;  // the final-normed hidden state of every output row
    bool long_rope = false;    // phi3: use the long rope factors (context beyond n_ctx_orig)
};

// Scratch space for the activations of up to n_max tokens, reused across
// calls so that decoding allocates nothing per token.
class Workspace {
public:
    void reserve(const HParams& hp, int64_t n_tokens);
    int64_t capacity() const { return capacity_; }

    std::vector<float> x, h, q, k, v, qkv, attn, o, gate, up, ffn, out_rows;

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
    static std::unique_ptr<Model> load(const std::string& path, gguf::LoadMode mode = gguf::LoadMode::Auto,
                                       bool pack_weights = true);
    // Uses an already opened file (which must outlive the model).
    static std::unique_ptr<Model> from_file(std::shared_ptr<const gguf::File> file, bool pack_weights = true);

    const HParams& hparams() const { return hp_; }
    const gguf::File& file() const { return *file_; }
    const Weights& weights() const { return weights_; }
    uint64_t n_params() const;
    uint64_t size_bytes() const;   // bytes of all tensors
    uint64_t packed_bytes() const { return packed_bytes_; }  // bytes of weights copied into packed layouts
    std::string description() const;  // "llama 1B Q4_0"-like, as llama-bench's model column

    // Runs the transformer over one micro-batch. logits: n_vocab x n_outputs
    // floats (when want_logits), hidden: n_embd x n_outputs (when want_hidden).
    void forward(ops::Ops& ops, Workspace& ws, const ForwardInput& in, AttentionMemory& memory, float* logits,
                 float* hidden) const;

    // Rope parameters of a layer (SWA layers may use their own base).
    ops::RopeParams rope_params(uint32_t layer, bool long_rope) const;

private:
    Model() = default;
    // Replaces the matrices that `isa`'s kernels read faster packed by packed copies.
    void pack_weights(cpu::Isa isa);
    std::shared_ptr<const gguf::File> file_;
    HParams hp_;
    Weights weights_;
    std::vector<std::shared_ptr<void>> packed_storage_;  // the packed copies the views point into
    uint64_t packed_bytes_ = 0;
};

}  // namespace cria::model
