#include "cria/runtime/batch.h"

#include <algorithm>
#include <string>

#include "cria/core/error.h"
#include "cria/memory/kv_cache.h"

namespace cria::runtime {

void Batch::clear() {
    tokens_.clear();
    embd_.clear();
    pos_.clear();
    seq_masks_.clear();
    outputs_.clear();
    rope_pos_.clear();
    orders_.clear();
    causal_ = true;
}

uint64_t Batch::mask_of(const std::vector<SeqId>& seqs) const {
    if (seqs.empty()) throw Error("batch: a token must belong to at least one sequence");
    uint64_t mask = 0;
    for (SeqId s : seqs) {
        if (s < 0 || s >= memory::kMaxSequences)
            throw Error("batch: sequence id " + std::to_string(s) + " is outside 0.." +
                        std::to_string(memory::kMaxSequences - 1));
        mask |= uint64_t{1} << s;
    }
    return mask;
}

void Batch::add(TokenId token, int32_t pos, std::initializer_list<SeqId> seqs, bool output) {
    add(token, pos, std::vector<SeqId>(seqs), output);
}

void Batch::add(TokenId token, int32_t pos, const std::vector<SeqId>& seqs, bool output) {
    if (!embd_.empty()) throw Error("batch: tokens and embeddings cannot be mixed");
    seq_masks_.push_back(mask_of(seqs));
    tokens_.push_back(token);
    pos_.push_back(pos);
    outputs_.push_back(output);
}

void Batch::add_embedding(const float* embd, int32_t n_embd, int32_t pos, const std::vector<SeqId>& seqs, bool output) {
    if (!tokens_.empty()) throw Error("batch: tokens and embeddings cannot be mixed");
    if (n_embd <= 0 || (n_embd_ != 0 && n_embd != n_embd_)) throw Error("batch: embeddings of different widths");
    seq_masks_.push_back(mask_of(seqs));
    n_embd_ = n_embd;
    embd_.insert(embd_.end(), embd, embd + n_embd);
    pos_.push_back(pos);
    outputs_.push_back(output);
    if (!rope_pos_.empty()) {
        rope_pos_.insert(rope_pos_.end(), {pos, pos, pos, 0});
        orders_.push_back(0);
    }
}

void Batch::add_embedding(const float* embd, int32_t n_embd, const std::array<int32_t, 4>& rope_pos, int32_t order,
                          const std::vector<SeqId>& seqs, bool output) {
    add_embedding(embd, n_embd, rope_pos[0], seqs, output);
    if (rope_pos_.empty()) {
        // The first such entry: the ones before it rotate as text does.
        for (int32_t p : pos_) rope_pos_.insert(rope_pos_.end(), {p, p, p, 0});
        orders_.assign(pos_.size(), 0);
    }
    std::copy(rope_pos.begin(), rope_pos.end(), rope_pos_.end() - 4);
    orders_.back() = order;
}

Batch Batch::from_tokens(const std::vector<TokenId>& tokens, int32_t first_pos, SeqId seq, bool all_outputs) {
    Batch b;
    for (size_t i = 0; i < tokens.size(); ++i)
        b.add(tokens[i], first_pos + static_cast<int32_t>(i), {seq}, all_outputs || i + 1 == tokens.size());
    return b;
}

}  // namespace cria::runtime
