#pragma once
// Turn checkpoints for models whose memory cannot drop a suffix (recurrent
// and hybrid models: a state holds its whole history). When a prompt has
// been evaluated and when a request ends, the scheduler keeps the slot's
// saved state (Backend::snapshot_sequence: the recurrent states and the KV
// cells) with the tokens it holds; the next
// request whose prompt starts with those tokens -- the next turn of the same
// conversation, whichever slot it lands in -- restores the state and
// evaluates only the tokens after it, as prefix reuse does with a KV cache.
// (llama.cpp's server re-processes the whole prompt of a hybrid model every
// turn: its issues #21831 and #24055.)
//
// The store is bounded in bytes; the least recently used checkpoint goes
// first. A checkpoint larger than the whole budget is not kept. Checkpoints
// are keyed by the LoRA scales their state was computed with: a prompt under
// other scales never resumes from them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <vector>

#include "cria/vocab/vocab.h"

namespace cria::server {

using vocab::TokenId;

class StateCheckpoints {
public:
    struct Checkpoint {
        std::vector<TokenId> tokens;  // what the saved state holds, positions 0..n-1
        std::vector<uint8_t> state;   // Backend::snapshot_sequence's bytes
        std::vector<float> lora;      // the adapters' scales of the state (empty: no adapters)
    };

    // on_drop: called with every state let go or refused (not at the end), as PromptCache's.
    explicit StateCheckpoints(size_t max_bytes, std::function<void(std::span<const uint8_t>)> on_drop = {})
        : max_bytes_(max_bytes), on_drop_(std::move(on_drop)) {}

    // Keeps a checkpoint (replacing one with the same tokens and scales),
    // then drops the least recently used ones until the store fits its budget.
    void put(std::vector<TokenId> tokens, std::vector<uint8_t> state, const std::vector<float>& lora = {});
    // The checkpoint under the scales `lora` with the most tokens that are a
    // prefix of `prompt` and leave at least one prompt token to evaluate (its
    // logits give the first sample); nullptr when none. A hit counts as a use.
    const Checkpoint* longest_prefix_of(std::span<const TokenId> prompt, const std::vector<float>& lora = {});

    size_t size() const { return entries_.size(); }
    size_t bytes() const { return bytes_; }
    size_t max_bytes() const { return max_bytes_; }

private:
    static size_t bytes_of(const Checkpoint& c) { return c.state.size() + c.tokens.size() * sizeof(TokenId); }

    void dropped(const std::vector<uint8_t>& state) const {
        if (on_drop_) on_drop_(state);
    }

    size_t max_bytes_;
    std::function<void(std::span<const uint8_t>)> on_drop_;
    size_t bytes_ = 0;
    std::list<Checkpoint> entries_;  // most recently used first
};

}  // namespace cria::server
