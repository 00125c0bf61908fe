#pragma once
// The network of an EAGLE-3 draft head (GGUF architecture `eagle3`, as
// llama.cpp's converter writes it; facts in shared/docs/draft-formats.md §3):
//
//   encoder   g = fc · [L_a ; L_b ; L_c]        (three target layer inputs, in
//                                               eagle3.target_layers order;
//                                               RMSNorm first with norm_before_fc)
//   decoder   x = [RMSNorm(E[t]; attn_norm) ; RMSNorm(g; attn_norm_2)]   (2d wide)
//             r = wo · attention(RoPE(Wq x), RoPE(Wk x), Wv x) + (g, or the
//                 normalised g with norm_before_residual)
//             s = r + down(silu(gate n) * up n),  n = RMSNorm(r; ffn_norm)
//             logits = output · RMSNorm(s; output_norm)  over the draft vocabulary
//   d2t       maps draft row j to the absolute target token id d2t[j].
//
// It is not a text model: it cannot run without a target's features, and it
// borrows the target's token embedding (and output matrix) when it has none.
// So it is loaded here, by the drafter, checked against its target, and not
// registered as a model architecture (docs/ARCHITECTURE.md, "Drafter heads").
//
// Eagle3Head holds the weights (views into the file or the target) and is
// shared read-only; Eagle3Session runs it with its own KV cache, whose cells
// are indexed by position (one sequence): writing a position overwrites it,
// and a query at position p attends to cells 0..p.

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

class Eagle3Head {
public:
    // Loads `path` and checks it against `target` (hidden size, layer ids,
    // vocabulary). Throws cria::Error naming what does not fit. The target
    // must outlive the head (its embedding may be borrowed).
    static std::shared_ptr<const Eagle3Head> load(const std::string& path, const model::Model& target);
    // The same from an opened file (tests).
    static std::shared_ptr<const Eagle3Head> from_file(std::shared_ptr<const gguf::File> file,
                                                       const model::Model& target);

    // Whether `path` is a GGUF file of architecture eagle3 (type detection).
    static bool is_eagle3_file(const std::string& path);

    uint32_t n_embd = 0;          // draft hidden size d
    uint32_t n_embd_target = 0;   // eagle3.target_hidden_size
    uint32_t n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
    float eps = 1e-5f;
    float rope_base = 10000.0f;
    float rope_scale = 1.0f;
    bool norm_before_fc = false;
    bool norm_before_residual = false;
    std::vector<uint32_t> target_layers;  // three layer-input ids of the target
    int64_t n_vocab_draft = 0;            // rows of the output matrix
    std::vector<int32_t> d2t;             // absolute target id per draft row (identity when empty)

    ops::TensorView fc, token_embd, output;
    ops::TensorView wq, wk, wv, wo, gate, up, down;
    std::vector<float> enc_norm, attn_norm, attn_norm_2, ffn_norm, output_norm, rope_freqs;

    // The target token a draft logit row index stands for.
    int32_t target_token(int64_t draft_row) const {
        return d2t.empty() ? static_cast<int32_t>(draft_row) : d2t[static_cast<size_t>(draft_row)];
    }

private:
    std::shared_ptr<const gguf::File> file_;
};

class Eagle3Session {
public:
    // n_ctx: positions the KV cache holds; max_batch: rows per call.
    Eagle3Session(std::shared_ptr<const Eagle3Head> head, ops::Ops& ops, int32_t n_ctx, int32_t max_batch);

    // g rows (n x d) from feature rows (n x 3·n_embd_target, the three layers
    // concatenated in target_layers order).
    void encode(const float* features, int64_t n, float* g);
    // Runs the decoder layer over rows (tokens[i], g[i]) at positions[i]
    // (ascending, contiguous), writing their K/V at those positions. Keeps
    // the pre-norm output s and the draft-vocabulary logits of the last row
    // (last_hidden(), last_logits()).
    // A row whose token is < 0 (an image position) takes input_rows[i]
    // (d floats; null or absent: zeros) as its embedding (head_inputs.h).
    void decode(const int32_t* tokens, const float* g, const int32_t* positions, int64_t n,
                const float* const* input_rows = nullptr);

    const std::vector<float>& last_hidden() const { return s_last_; }
    const std::vector<float>& last_logits() const { return logits_; }
    int32_t n_ctx() const { return n_ctx_; }
    int32_t max_batch() const { return max_batch_; }
    const Eagle3Head& head() const { return *head_; }

private:
    std::shared_ptr<const Eagle3Head> head_;
    ops::Ops& ops_;
    int32_t n_ctx_, max_batch_;
    std::vector<uint16_t> k_cache_, v_cache_;  // F16 [head_dim, n_head_kv, n_ctx], as llama.cpp's default
    ops::RopeParams rope_;
    // Work buffers (max_batch rows).
    std::vector<float> normed_in_, emb_, x_, q_, k_, v_, attn_, r_, n_, gate_, up_, s_;
    std::vector<float> s_last_, normed_last_, logits_;
};

}  // namespace cria::spec
