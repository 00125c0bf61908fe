// How a batch is cut into micro-batches (memory::Split).
#include <algorithm>

#include "cria/memory/memory.h"

namespace cria::memory {

Split split_consecutive(int64_t n_tokens, uint32_t n_ubatch) {
    Split s;
    const int64_t step = std::max<int64_t>(n_ubatch, 1);
    for (int64_t first = 0; first < n_tokens; first += step) s.bounds.push_back(first);
    s.bounds.push_back(n_tokens);
    return s;
}

Split split_by_sequence(const UbatchView& batch, uint32_t n_ubatch) {
    // Group the entries by their sequence set, groups in order of first
    // appearance, entries in batch order (a sequence's tokens stay in order).
    std::vector<std::pair<uint64_t, std::vector<int32_t>>> groups;
    for (int64_t i = 0; i < batch.n_tokens; ++i) {
        const uint64_t m = batch.seq_masks[i];
        auto it = std::find_if(groups.begin(), groups.end(), [m](const auto& g) { return g.first == m; });
        if (it == groups.end()) {
            groups.emplace_back(m, std::vector<int32_t>{});
            it = groups.end() - 1;
        }
        it->second.push_back(static_cast<int32_t>(i));
    }
    Split s;
    s.in_order = false;
    s.order.reserve(static_cast<size_t>(batch.n_tokens));
    const size_t step = std::max<size_t>(n_ubatch, 1);
    for (const auto& [mask, entries] : groups)
        for (size_t first = 0; first < entries.size(); first += step) {
            s.bounds.push_back(static_cast<int64_t>(s.order.size()));
            const size_t end = std::min(entries.size(), first + step);
            s.order.insert(s.order.end(), entries.begin() + static_cast<ptrdiff_t>(first),
                           entries.begin() + static_cast<ptrdiff_t>(end));
        }
    s.bounds.push_back(static_cast<int64_t>(s.order.size()));
    // A split that happens to keep batch order is a plain slicing.
    bool identity = true;
    for (size_t i = 0; i < s.order.size() && identity; ++i) identity = s.order[i] == static_cast<int32_t>(i);
    if (identity) {
        s.in_order = true;
        s.order.clear();
    }
    return s;
}

Split Memory::split(const UbatchView& batch, uint32_t n_ubatch) const {
    return split_consecutive(batch.n_tokens, n_ubatch);
}

}  // namespace cria::memory
