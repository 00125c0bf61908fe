// Per-vocabulary data for the grammar sampler: token texts and a byte trie.

#include <algorithm>
#include <numeric>

#include "cria/grammar/sampler.h"

namespace cria::grammar {

std::shared_ptr<const VocabIndex> VocabIndex::build(const vocab::Vocab& vocab) {
    auto index = std::make_shared<VocabIndex>();
    const size_t n = vocab.size();
    index->pieces_.resize(n);
    index->eog_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        auto id = static_cast<vocab::TokenId>(i);
        index->pieces_[i] = vocab.token_to_piece(id, true);
        index->eog_[i] = vocab.is_eog(id);
    }
    const auto& pieces = index->pieces_;
    index->by_text_.resize(n);
    std::iota(index->by_text_.begin(), index->by_text_.end(), 0);
    std::stable_sort(index->by_text_.begin(), index->by_text_.end(),
                     [&](vocab::TokenId a, vocab::TokenId b) { return pieces[static_cast<size_t>(a)] < pieces[static_cast<size_t>(b)]; });

    // The trie holds the tokens the grammar matches as text: not EOG tokens
    // (they follow the "can the grammar end" rule) and not empty ones
    // (which could never advance the grammar; llama.cpp rejects them too).
    std::vector<vocab::TokenId> sorted;
    for (vocab::TokenId id : index->by_text_) {
        if (!index->eog_[static_cast<size_t>(id)] && !pieces[static_cast<size_t>(id)].empty()) sorted.push_back(id);
    }
    // Breadth-first: a node is a range of `sorted` sharing its first `depth`
    // bytes; its children are the runs of equal byte at position `depth`.
    struct Pending { size_t lo, hi, depth; };
    std::vector<Pending> queue{{0, sorted.size(), 0}};
    for (size_t q = 0; q < queue.size(); ++q) {
        auto [lo, hi, depth] = queue[q];
        index->nodes_.push_back({static_cast<uint32_t>(index->edges_.size()), static_cast<uint32_t>(index->ends_.size())});
        while (lo < hi && pieces[static_cast<size_t>(sorted[lo])].size() == depth) index->ends_.push_back(sorted[lo++]);
        while (lo < hi) {
            auto byte = static_cast<uint8_t>(pieces[static_cast<size_t>(sorted[lo])][depth]);
            size_t end = lo;
            while (end < hi && static_cast<uint8_t>(pieces[static_cast<size_t>(sorted[end])][depth]) == byte) ++end;
            index->edges_.push_back({static_cast<uint32_t>(queue.size()), byte});
            queue.push_back({lo, end, depth + 1});
            lo = end;
        }
    }
    // Nodes record where their edges and ends start; the edges were appended
    // while the node was processed, so a sentinel closes the last one.
    // (Each node's edges are appended right after it is pushed, in order.)
    index->nodes_.push_back({static_cast<uint32_t>(index->edges_.size()), static_cast<uint32_t>(index->ends_.size())});
    return index;
}

vocab::TokenId VocabIndex::find(std::string_view text) const {
    auto it = std::lower_bound(by_text_.begin(), by_text_.end(), text,
                               [&](vocab::TokenId id, std::string_view t) { return pieces_[static_cast<size_t>(id)] < t; });
    if (it != by_text_.end() && pieces_[static_cast<size_t>(*it)] == text) return *it;
    return vocab::kNoToken;
}

void VocabIndex::allowed_by_text(Automaton& automaton, StateId state, std::vector<uint64_t>& mask) const {
    if (state == kDeadState) return;
    std::vector<std::pair<uint32_t, StateId>> todo{{0u, state}};
    while (!todo.empty()) {
        auto [node, st] = todo.back();
        todo.pop_back();
        const uint32_t edge_end = nodes_[node + 1].edges;
        for (uint32_t e = nodes_[node].edges; e < edge_end; ++e) {
            StateId next = automaton.step(st, edges_[e].byte);
            if (next == kDeadState) continue;
            const uint32_t child = edges_[e].node;
            const Node& c = nodes_[child];
            const Node& c_next = nodes_[child + 1];
            for (uint32_t t = c.ends; t < c_next.ends; ++t) {
                auto id = static_cast<uint32_t>(ends_[t]);
                mask[id / 64] |= uint64_t{1} << (id % 64);
            }
            if (c.edges != c_next.edges) todo.push_back({child, next});
        }
    }
}

}  // namespace cria::grammar
