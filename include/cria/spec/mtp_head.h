#pragma once
// A target's multi-token-prediction ("NextN") block, as llama.cpp's
// draft-mtp runs it (shared/docs/draft-formats.md §2; fixture README §6):
// block b = the target's trunk layer count, read from the target's own GGUF
// or from a separate MTP GGUF of the same architecture.
//
//   u      = eh_proj · [RMSNorm(E[x]; enorm) ; RMSNorm(h; hnorm)]
//   out    = one ordinary block of the architecture on u (its own KV cache)
//   h_next = out (mimo2 exports the pre-norm state)
//   logits = head · RMSNorm(out; shared_head_norm, else layer_output_norm,
//            else output_norm); head = shared_head_head, else output
//
// The row at position p pairs the token at p with the target's h at p-1.
// Only mimo2's block (fused or split QKV, NeoX rope, SwiGLU) is implemented;
// other architectures, several chained NextN heads and per-tensor scales are
// refused with a clear error.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cria/ops/ops.h"

namespace cria::gguf {
class File;
}
namespace cria::model {
class Model;
}

namespace cria::spec {

class MtpHead {
public:
    // path: the target's own file or a separate MTP GGUF. Throws cria::Error.
    static std::shared_ptr<const MtpHead> load(const std::string& path, const model::Model& target);
    // Whether the file holds a NextN block (blk.N.nextn.eh_proj.weight for
    // some N): llama.cpp's type detection.
    static bool has_nextn(const std::string& path);

    uint32_t n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, block = 0;
    float eps = 1e-5f, rope_base = 10000.0f, rope_scale = 1.0f;
    uint32_t window = 0;  // sliding window of the block (0: none)
    int64_t n_vocab = 0;

    std::vector<float> enorm, hnorm, attn_norm, ffn_norm, head_norm, sinks;
    ops::TensorView eh_proj, wqkv, wq, wk, wv, wo, gate, up, down, token_embd, head;

private:
    std::shared_ptr<const gguf::File> file_;
};

// Runs an MtpHead with its own KV cache indexed by position (one sequence).
class MtpSession {
public:
    MtpSession(std::shared_ptr<const MtpHead> head, ops::Ops& ops, int32_t n_ctx, int32_t max_batch);
    // n rows at positions p0 .. p0+n-1: tokens and h rows ([n_embd] each).
    // Writes their K/V; with `logits`, the last row's logits and h_next.
    // A row whose token is < 0 (an image position) takes input_rows[i]
    // (n_embd floats; null or absent: zeros) as its embedding (head_inputs.h).
    void decode(const int32_t* tokens, const float* h, int32_t p0, int64_t n, bool logits,
                const float* const* input_rows = nullptr);
    const std::vector<float>& last_logits() const { return logits_; }
    const std::vector<float>& last_h() const { return h_last_; }
    int32_t n_ctx() const { return n_ctx_; }
    int32_t max_batch() const { return max_batch_; }

private:
    std::shared_ptr<const MtpHead> head_;
    ops::Ops& ops_;
    int32_t n_ctx_, max_batch_;
    std::vector<uint16_t> k_cache_, v_cache_;  // F16 [head_dim, n_head_kv, n_ctx]
    ops::RopeParams rope_;
    std::vector<float> e_, hn_, cat_, u_, n_, qkv_, q_, k_, v_, attn_, o_, gate_, up_, h_last_, normed_, logits_;
    std::vector<int32_t> pos_;
};

}  // namespace cria::spec
