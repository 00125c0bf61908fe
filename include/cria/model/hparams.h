#pragma once
// Hyperparameters of a transformer model, read and validated in one place.
//
// Keys follow llama.cpp's naming ("<arch>.embedding_length", ...). Every
// value is checked here (missing keys, zero sizes, heads that do not divide
// the width, ...) so that model code can trust them without checking again.

#include <cstdint>
#include <string>

namespace cria::gguf {
class File;
}

namespace cria::model {

enum class Architecture { Llama, Qwen2, Qwen3 };

// How RoPE pairs the dimensions of a head: ggml's "normal" mode rotates
// adjacent pairs (x[2i], x[2i+1]); NeoX mode rotates (x[i], x[i + n_rot/2]).
enum class RopeOrder { Normal, NeoX };

struct HParams {
    Architecture arch = Architecture::Llama;
    std::string arch_name;      // as in general.architecture

    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;   // context length the model was trained for
    uint32_t n_embd = 0;        // width of the residual stream
    uint32_t n_layer = 0;
    uint32_t n_head = 0;        // query heads
    uint32_t n_head_kv = 0;     // key/value heads (grouped-query attention when < n_head)
    uint32_t n_ff = 0;          // hidden width of the feed-forward block
    uint32_t head_dim = 0;      // width of one query/key head
    uint32_t head_dim_v = 0;    // width of one value head
    uint32_t n_rot = 0;         // rotated dimensions per head (<= head_dim)

    float norm_rms_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / linear rope scaling factor
    RopeOrder rope_order = RopeOrder::Normal;

    bool has_qkv_bias = false;  // qwen2: biases on Q, K, V projections
    bool has_qk_norm = false;   // qwen3: RMSNorm over each Q and K head
    bool tied_output = false;   // output projection shares the token embedding

    uint32_t n_gqa() const { return n_head / n_head_kv; }
    uint32_t n_embd_q() const { return n_head * head_dim; }
    uint32_t n_embd_k() const { return n_head_kv * head_dim; }
    uint32_t n_embd_v() const { return n_head_kv * head_dim_v; }
};

// Reads and validates the hyperparameters of `file`. Throws cria::Error naming
// the file and the key for anything missing, inconsistent or unsupported.
HParams read_hparams(const gguf::File& file);

}  // namespace cria::model
