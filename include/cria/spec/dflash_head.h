#pragma once
// The network of a DFlash block drafter (GGUF architecture `dflash`, as
// llama.cpp's converter writes it; shared/docs/draft-formats.md §4):
//
//   encoder    g = RMSNorm(s · fc · [L_1 ; ... ; L_K]; enc.output_norm)  (K target
//              layer inputs in dflash.target_layers order, s = fc.scale or 1)
//   injection  for every committed target position p and every layer i:
//              K_i(p) = RoPE(k_norm_i(W_k^i g)), V_i(p) = W_v^i g (no attn_norm)
//   block      [anchor, MASK, ..., MASK] at n_past..: Qwen3-style layers (q/k
//              per-head RMSNorm, NEOX rope, SwiGLU) whose attention is
//              non-causal over the injected context and the whole block;
//              logits = output · RMSNorm(x; output_norm) for every row.
//
// Like EAGLE-3 (eagle3_head.h), it is loaded by its drafter, checked
// against the target, and not a registered architecture. A DSpark file's
// Markov and confidence heads are loaded with it (dspark_head.h);
// sliding-window layers are refused with a clear error.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cria/ops/ops.h"
#include "cria/spec/dspark_head.h"

namespace cria::gguf {
class File;
}
namespace cria::model {
class Model;
}

namespace cria::spec {

class DflashHead {
public:
    static std::shared_ptr<const DflashHead> load(const std::string& path, const model::Model& target);
    static bool is_dflash_file(const std::string& path);
    // A dflash file with DSpark heads (llama.cpp: markov_w1.weight present).
    static bool is_dspark_file(const std::string& path);

    uint32_t n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_layer = 0;
    float eps = 1e-6f, rope_base = 10000.0f, fc_scale = 1.0f;
    uint32_t block_size = 16;
    int32_t mask_token = -1;
    std::vector<uint32_t> target_layers;
    int64_t n_vocab_draft = 0;
    std::vector<int32_t> d2t;

    struct Layer {
        std::vector<float> attn_norm, q_norm, k_norm, ffn_norm;
        ops::TensorView wq, wk, wv, wo, gate, up, down;
    };
    std::vector<Layer> layers;
    ops::TensorView fc, token_embd, output;
    std::vector<float> enc_norm, output_norm;
    std::optional<DsparkHeads> dspark;  // a DSpark file (markov_w1.weight present)

    int32_t target_token(int64_t row) const {
        return d2t.empty() ? static_cast<int32_t>(row) : d2t[static_cast<size_t>(row)];
    }

private:
    std::shared_ptr<const gguf::File> file_;
};

// Runs a DflashHead with its own KV cache indexed by position (one sequence).
class DflashSession {
public:
    DflashSession(std::shared_ptr<const DflashHead> head, ops::Ops& ops, int32_t n_ctx, int32_t max_batch);
    // Encodes n feature rows (K·n_embd each) and writes every layer's K/V at
    // positions p0 .. p0+n-1.
    void inject(const float* features, int64_t n, int32_t p0);
    // Runs the block tokens at positions p0.. over the context 0..p0-1;
    // logits(i) is row i's draft-vocabulary logits.
    void block(const int32_t* tokens, int64_t n, int32_t p0);
    const float* logits(int64_t i) const { return &logits_[static_cast<size_t>(i * head_->n_vocab_draft)]; }
    float* mutable_logits(int64_t i) { return &logits_[static_cast<size_t>(i * head_->n_vocab_draft)]; }
    // Row i's hidden state after output_norm (the logits' input, DSpark's t_embd).
    const float* hidden(int64_t i) const { return &n_[static_cast<size_t>(i * head_->n_embd)]; }
    int32_t n_ctx() const { return n_ctx_; }
    int32_t max_batch() const { return max_batch_; }

private:
    void write_kv(size_t layer, const ops::TensorView& k, const ops::TensorView& v, int32_t p0, int64_t n);
    std::shared_ptr<const DflashHead> head_;
    ops::Ops& ops_;
    int32_t n_ctx_, max_batch_;
    std::vector<std::vector<uint16_t>> k_cache_, v_cache_;  // per layer, F16 [head_dim, n_head_kv, n_ctx]
    ops::RopeParams rope_;
    std::vector<float> g_, x_, n_, q_, k_, v_, attn_, o_, gate_, up_, logits_;
    std::vector<int32_t> pos_;
};

}  // namespace cria::spec
