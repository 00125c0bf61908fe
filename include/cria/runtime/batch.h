#pragma once
// A batch of tokens for Context::decode (llama.cpp's llama_batch): for every
// entry a token id (or an embedding row), its position, the sequences it
// belongs to, and whether its logits (or embedding) are wanted.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace cria::runtime {

using TokenId = int32_t;
using SeqId = int32_t;

class Batch {
public:
    Batch() = default;

    void clear();
    // Appends a token at `pos` belonging to `seqs`, with logits when `output`.
    void add(TokenId token, int32_t pos, std::initializer_list<SeqId> seqs, bool output);
    void add(TokenId token, int32_t pos, const std::vector<SeqId>& seqs, bool output);
    // Appends an input embedding (n_embd floats) instead of a token.
    void add_embedding(const float* embd, int32_t n_embd, int32_t pos, const std::vector<SeqId>& seqs, bool output);
    // An M-RoPE image token (llama.cpp's 4-section positions): rope_pos is
    // (temporal, height, width, extra); the cache position is the temporal
    // one, shared by the whole image, and `order` (the raster index) keeps
    // attention causal among the tokens at that position. Entries added
    // without them rotate by (pos, pos, pos, 0), as text tokens do.
    void add_embedding(const float* embd, int32_t n_embd, const std::array<int32_t, 4>& rope_pos, int32_t order,
                       const std::vector<SeqId>& seqs, bool output);
    // Attention among the batch's tokens both ways (llama_set_causal_attn
    // false while gemma3 decodes an image). Context::decode then needs the
    // batch in one micro-batch.
    void set_causal(bool causal) { causal_ = causal; }
    bool causal() const { return causal_; }

    int32_t size() const { return static_cast<int32_t>(pos_.size()); }
    bool empty() const { return pos_.empty(); }
    bool has_embeddings() const { return !embd_.empty(); }
    int32_t n_embd() const { return n_embd_; }

    const std::vector<TokenId>& tokens() const { return tokens_; }
    const std::vector<float>& embeddings() const { return embd_; }
    const std::vector<int32_t>& positions() const { return pos_; }
    const std::vector<uint64_t>& seq_masks() const { return seq_masks_; }  // bit s: sequence s
    const std::vector<uint8_t>& outputs() const { return outputs_; }
    // Four rope positions per entry ([t, h, w, e] each) when any entry has
    // them, else empty; the order of each entry at its position (same rule).
    bool has_rope_positions() const { return !rope_pos_.empty(); }
    const std::vector<int32_t>& rope_positions() const { return rope_pos_; }
    const std::vector<int32_t>& orders() const { return orders_; }
    void set_output(int32_t i, bool output) { outputs_.at(static_cast<size_t>(i)) = output; }

    // One sequence's tokens at positions first_pos.., logits for the last one only.
    static Batch from_tokens(const std::vector<TokenId>& tokens, int32_t first_pos, SeqId seq = 0,
                             bool all_outputs = false);

private:
    uint64_t mask_of(const std::vector<SeqId>& seqs) const;
    std::vector<TokenId> tokens_;
    std::vector<float> embd_;
    int32_t n_embd_ = 0;
    std::vector<int32_t> pos_;
    std::vector<uint64_t> seq_masks_;
    std::vector<uint8_t> outputs_;
    std::vector<int32_t> rope_pos_, orders_;
    bool causal_ = true;
};

}  // namespace cria::runtime
