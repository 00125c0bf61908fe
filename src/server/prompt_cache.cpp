#include "cria/server/prompt_cache.h"

#include <algorithm>

namespace cria::server {
namespace {

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

}  // namespace

bool PromptCache::would_keep(std::span<const TokenId> tokens, uint64_t state_bytes, const std::vector<float>& lora) const {
    if (!enabled() || tokens.empty() || state_bytes > budget_) return false;
    for (const Entry& e : entries_)
        if (e.lora == lora && common_prefix(e.tokens, tokens) == tokens.size()) return false;  // already held, with as much or more
    return true;
}

bool PromptCache::insert(std::vector<TokenId> tokens, std::vector<uint8_t> state, const std::vector<float>& lora) {
    if (!would_keep(tokens, state.size(), lora)) {
        dropped(state);
        return false;
    }
    // The state moves off the heap before anything is evicted for it.
    PageBytes kept;
    try {
        kept = PageBytes(state);
    } catch (...) {
        dropped(state);
        throw;
    }
    // Entries the new one extends (under the same scales) are of no more use.
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->lora == lora && common_prefix(it->tokens, tokens) == it->tokens.size()) {
            bytes_ -= it->state.size();
            dropped(it->state);
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
    while (!entries_.empty() && bytes_ + state.size() > budget_) {
        bytes_ -= entries_.back().state.size();
        dropped(entries_.back().state);
        entries_.pop_back();
    }
    bytes_ += kept.size();
    entries_.push_front(Entry{std::move(tokens), std::move(kept), lora});
    return true;
}

PromptCache::Match PromptCache::best_match(std::span<const TokenId> prompt, size_t more_than,
                                           const std::vector<float>& lora) {
    auto best = entries_.end();
    size_t best_len = more_than;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->lora != lora) continue;
        const size_t len = common_prefix(it->tokens, prompt);
        if (len > best_len) best = it, best_len = len;
    }
    if (best == entries_.end()) return {};
    entries_.splice(entries_.begin(), entries_, best);  // now the most recently used
    return {&entries_.front(), best_len};
}

}  // namespace cria::server
