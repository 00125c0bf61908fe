#pragma once
// The prompt cache (llama-server's --cache-ram): the saved state of prompts
// that slots have let go, kept in RAM up to a byte budget, so that a later
// request on any slot whose prompt shares a prefix with one of them loads
// those cells instead of evaluating them again.
//
// An entry is a token list and its sequence state as bytes
// (Backend::sequence_state: the KV cells and any other memory's sections),
// copied into PageBytes: a large state has its own mapping, so that
// replacing entries gives their memory back instead of fragmenting the heap.
// The least recently used entries go first when the budget is reached. An
// entry whose tokens are a prefix of a new one is dropped (the new one
// serves every prompt the old one did, and more), and a new one that is a
// prefix of an entry already kept is not stored.
//
// Entries are keyed by the LoRA scales their cells were computed with (the
// cells depend on them): an entry serves only a prompt under the same
// scales, and entries under other scales never replace each other.
#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <vector>

#include "cria/server/page_bytes.h"
#include "cria/vocab/vocab.h"

namespace cria::server {

using vocab::TokenId;

class PromptCache {
public:
    struct Entry {
        std::vector<TokenId> tokens;
        PageBytes state;
        std::vector<float> lora;  // the adapters' scales of its cells (empty: no adapters)
    };
    struct Match {
        const Entry* entry = nullptr;  // null: no entry shares more than asked
        size_t n_common = 0;           // tokens its list shares with the prompt
    };

    // budget_bytes: the most state bytes kept (0: the cache is off).
    explicit PromptCache(uint64_t budget_bytes) : budget_(budget_bytes) {}

    // Called with every state the cache lets go or refuses (not at its end):
    // a state whose parts live elsewhere too (a pipeline's other ranks) is dropped there.
    using DropState = std::function<void(std::span<const uint8_t>)>;
    void set_on_drop(DropState on_drop) { on_drop_ = std::move(on_drop); }

    bool enabled() const { return budget_ > 0; }
    // Keeps `state` for `tokens`, evicting least recently used entries to make
    // room. False (nothing stored) when the cache is off, the state alone is
    // over the budget, or an entry already holds `tokens` or more of them.
    bool insert(std::vector<TokenId> tokens, std::vector<uint8_t> state, const std::vector<float>& lora = {});
    // Whether insert() would store an entry for `tokens` (the caller can skip
    // saving a state that would be refused).
    bool would_keep(std::span<const TokenId> tokens, uint64_t state_bytes, const std::vector<float>& lora = {}) const;
    // The entry under the scales `lora` sharing the longest prefix with
    // `prompt`, if it shares more than `more_than` tokens; it becomes the
    // most recently used.
    Match best_match(std::span<const TokenId> prompt, size_t more_than, const std::vector<float>& lora = {});

    size_t size() const { return entries_.size(); }
    uint64_t bytes() const { return bytes_; }
    uint64_t budget() const { return budget_; }

private:
    void dropped(std::span<const uint8_t> state) const {
        if (on_drop_) on_drop_(state);
    }

    uint64_t budget_;
    DropState on_drop_;
    uint64_t bytes_ = 0;
    std::list<Entry> entries_;  // most recently used first
};

}  // namespace cria::server
