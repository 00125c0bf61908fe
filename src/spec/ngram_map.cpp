// ngram-map-k and ngram-map-k4v (llama.cpp's common_ngram_map_draft/accept).
//
// Both find the latest earlier occurrence of the key (the last n tokens).
// map-k drafts the m tokens after it, but no more than the target accepted
// the last time this key was drafted. map-k4v counts which m-grams followed
// the key (up to four different ones) and drafts the dominant one only.

#include <algorithm>

#include "cria/core/error.h"
#include "cria/spec/ngram.h"
#include "cria/spec/text_positions.h"

namespace cria::spec {

namespace {
constexpr uint32_t kMaxCount = 16380;  // counts saturate here, as llama.cpp's
}

NgramMapDrafter::NgramMapDrafter(const NgramParams& params, bool key_only) : params_(params), key_only_(key_only) {
    if (params.size_n < 1 || params.size_m < 1)
        throw Error(std::string(name()) + ": size-n and size-m must be at least 1");
    if (params.min_hits < 1) throw Error(std::string(name()) + ": min-hits must be at least 1");
}

void NgramMapDrafter::begin(const BeginInput& /*input*/) {
    // Keys point into the history of one request.
    keys_.clear();
    last_created_ = false;
}

void NgramMapDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const std::vector<TokenId>& history = input.history;
    const TokenId last = input.last;
    last_created_ = false;
    const size_t n = static_cast<size_t>(params_.size_n);
    const size_t m = static_cast<size_t>(params_.size_m);
    const size_t len = history.size();
    if (len < 2 * n + m) return;

    // The key: the last n-1 history tokens, then `last`.
    std::vector<TokenId> key(history.end() - static_cast<std::ptrdiff_t>(n - 1), history.end());
    key.push_back(last);
    // A key with an image position in it is no n-gram (none spans an image).
    if (!all_text(key.data(), key.size())) return;
    auto key_at = [&](size_t j) { return std::equal(key.begin(), key.end(), history.begin() + static_cast<std::ptrdiff_t>(j)); };

    // Latest occurrence with a full m-gram behind it (position 0 skipped, as llama.cpp).
    size_t found = 0;
    for (size_t j = len - n - m - 1; j > 0; --j)
        if (key_at(j)) {
            found = j;
            break;
        }
    if (found == 0) return;

    size_t k = 0;
    while (k < keys_.size() && !key_at(keys_[k].start)) ++k;
    if (k == keys_.size()) {
        Key fresh;
        fresh.start = found;
        for (auto& v : fresh.values) v.n_accepted = static_cast<int>(m);
        keys_.push_back(fresh);
    }
    Key& entry = keys_[k];
    entry.hits = std::min(entry.hits + 1, kMaxCount);

    const int limit = std::max(n_max, 0);
    if (key_only_) {
        const int count = std::min({static_cast<int>(m), entry.values[0].n_accepted, limit});
        for (int i = 0; i < count && is_text(history[found + n + static_cast<size_t>(i)]); ++i)
            out.tokens.push_back(history[found + n + static_cast<size_t>(i)]);
        // llama.cpp leaves last_draft_created false in this mode: accept() changes nothing.
        return;
    }
    if (entry.hits < static_cast<uint32_t>(params_.min_hits)) return;

    // Count the m-grams that followed the key since the last scan.
    for (size_t i = entry.stats_upto; i <= found; ++i) {
        if (!key_at(i)) continue;
        const size_t value_start = i + n;
        for (auto& v : entry.values) {
            if (v.start == 0) {
                v.start = value_start;
                v.count = 0;
                v.n_accepted = static_cast<int>(m);
            } else if (!std::equal(history.begin() + static_cast<std::ptrdiff_t>(value_start),
                                   history.begin() + static_cast<std::ptrdiff_t>(value_start + m),
                                   history.begin() + static_cast<std::ptrdiff_t>(v.start))) {
                continue;
            }
            v.count = std::min(v.count + 1, kMaxCount);
            break;
        }
    }
    entry.stats_upto = found;

    int best = 0;
    uint32_t best_count = 0, others = 0;
    for (int v = 0; v < kValues; ++v)
        if (entry.values[v].count > best_count) {
            best_count = entry.values[v].count;
            best = v;
        }
    for (int v = 0; v < kValues; ++v)
        if (v != best) others += entry.values[v].count;
    if (others > 0 && best_count < 3 * others) return;  // no dominant continuation

    // As llama.cpp, the tokens after the latest occurrence are drafted.
    // The draft stops before an image position (the key's occurrence is text, what follows may not be).
    const int count = std::min({static_cast<int>(m), entry.values[best].n_accepted, limit});
    for (int i = 0; i < count && is_text(history[found + n + static_cast<size_t>(i)]); ++i)
        out.tokens.push_back(history[found + n + static_cast<size_t>(i)]);
    last_created_ = true;
    last_key_ = k;
    last_value_ = best;
}

void NgramMapDrafter::accept(int n_accepted) {
    if (!last_created_) return;
    keys_[last_key_].values[last_value_].n_accepted = n_accepted;
}

}  // namespace cria::spec
