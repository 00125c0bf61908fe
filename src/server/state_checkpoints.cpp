#include "cria/server/state_checkpoints.h"

#include <algorithm>

namespace cria::server {

void StateCheckpoints::put(std::vector<TokenId> tokens, std::vector<uint8_t> state, const std::vector<float>& lora) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->tokens == tokens && it->lora == lora) {
            bytes_ -= bytes_of(*it);
            dropped(it->state);
            entries_.erase(it);
            break;
        }
    Checkpoint c{std::move(tokens), std::move(state), lora};
    if (bytes_of(c) > max_bytes_) {  // it would push out everything and still not fit
        dropped(c.state);
        return;
    }
    bytes_ += bytes_of(c);
    entries_.push_front(std::move(c));
    while (bytes_ > max_bytes_) {
        bytes_ -= bytes_of(entries_.back());
        dropped(entries_.back().state);
        entries_.pop_back();
    }
}

const StateCheckpoints::Checkpoint* StateCheckpoints::longest_prefix_of(std::span<const TokenId> prompt,
                                                                         const std::vector<float>& lora) {
    auto best = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->lora != lora) continue;
        const auto& t = it->tokens;
        if (t.empty() || t.size() >= prompt.size()) continue;
        if (best != entries_.end() && t.size() <= best->tokens.size()) continue;
        if (std::equal(t.begin(), t.end(), prompt.begin())) best = it;
    }
    if (best == entries_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, best);  // now the most recently used
    return &entries_.front();
}

}  // namespace cria::server
