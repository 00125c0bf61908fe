#pragma once
// Template part of candidate_ops.h.

#include <algorithm>

namespace cria::sampling::detail {

template <typename Entry, typename TokenOf, typename Fn>
void for_each_present(Candidates& candidates, std::span<const Entry> entries, std::vector<const Entry*>& pending,
                      TokenOf token_of, Fn fn) {
    pending.clear();
    const size_t n = candidates.size();
    for (const Entry& entry : entries) {
        const TokenId token = token_of(entry);
        if (token >= 0 && static_cast<size_t>(token) < n && candidates[static_cast<size_t>(token)].id == token) {
            fn(candidates[static_cast<size_t>(token)], entry);
        } else {
            pending.push_back(&entry);
        }
    }
    if (pending.empty()) {
        return;
    }
    // Reordered candidates: sort the leftovers by token and binary-search
    // each candidate among them (log of a small number per candidate).
    std::sort(pending.begin(), pending.end(),
              [&](const Entry* a, const Entry* b) { return token_of(*a) < token_of(*b); });
    const TokenId lowest = token_of(*pending.front());
    const TokenId highest = token_of(*pending.back());
    for (Candidate& candidate : candidates) {
        if (candidate.id < lowest || candidate.id > highest) {
            continue;
        }
        auto it = std::lower_bound(pending.begin(), pending.end(), candidate.id,
                                   [&](const Entry* e, TokenId id) { return token_of(*e) < id; });
        for (; it != pending.end() && token_of(**it) == candidate.id; ++it) {
            fn(candidate, **it);
        }
    }
}

}  // namespace cria::sampling::detail
