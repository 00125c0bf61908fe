// ngram-mod: a fixed-size pool mapping the hash of n tokens to the token that
// followed them (llama.cpp's common_ngram_mod). Drafting walks the pool from
// the last n tokens for as long as it knows a continuation.

#include <algorithm>

#include "cria/core/error.h"
#include "cria/spec/ngram.h"
#include "cria/spec/text_positions.h"

namespace cria::spec {

NgramModPool::NgramModPool(int n, size_t size) : n_(n), entries_(size, kEmpty) {
    if (n < 1) throw Error("ngram-mod: n-match must be at least 1");
    if (size == 0) throw Error("ngram-mod: the pool needs at least one entry");
}

size_t NgramModPool::index(const TokenId* tokens) const {
    // llama.cpp's LCG-style polynomial hash, so pools fill the same way.
    uint64_t h = 0;
    for (int i = 0; i < n_; ++i) h = h * 6364136223846793005ULL + static_cast<uint64_t>(static_cast<uint32_t>(tokens[i]));
    return static_cast<size_t>(h % entries_.size());
}

void NgramModPool::add(const TokenId* tokens) {
    // n tokens and the one after them, all text: nothing is learnt across an image.
    if (!all_text(tokens, static_cast<size_t>(n_) + 1)) return;
    TokenId& slot = entries_[index(tokens)];
    if (slot != kEmpty) ++used_;  // counts overwrites, as llama.cpp's "used"
    slot = tokens[n_];
}

TokenId NgramModPool::get(const TokenId* tokens) const { return entries_[index(tokens)]; }

void NgramModPool::reset() {
    std::fill(entries_.begin(), entries_.end(), kEmpty);
    used_ = 0;
}

NgramModDrafter::NgramModDrafter(const NgramModParams& params, std::shared_ptr<NgramModPool> pool)
    : params_(params), pool_(std::move(pool)) {
    if (!pool_) throw Error("ngram-mod: no pool");
    if (pool_->n() != params.n_match) throw Error("ngram-mod: the shared pool has another n-match");
    if (params.n_max < 1 || params.n_min < 0) throw Error("ngram-mod: n-max must be >= 1 and n-min >= 0");
}

void NgramModDrafter::begin(const BeginInput& input) {
    const std::vector<TokenId>& prompt = input.prompt;
    added_upto_ = 0;
    n_draft_last_ = 0;
    n_low_ = 0;
    const size_t n = static_cast<size_t>(pool_->n());
    if (prompt.size() < n) return;
    for (size_t i = 0; i < prompt.size() - n; ++i) pool_->add(prompt.data() + i);
    added_upto_ = prompt.size() - n;
    // A pool that is a quarter overwritten has lost its use: start afresh.
    if (static_cast<double>(pool_->used()) / static_cast<double>(pool_->size()) > 0.25) pool_->reset();
}

void NgramModDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const std::vector<TokenId>& history = input.history;
    const TokenId last = input.last;
    n_draft_last_ = 0;
    const size_t n = static_cast<size_t>(pool_->n());
    const size_t len = history.size();
    if (len < n) return;
    // New n-grams join the pool in chunks of 32 positions.
    if (added_upto_ + 32 < len) {
        for (size_t i = added_upto_; i < len - n; ++i) pool_->add(history.data() + i);
        added_upto_ = len - n;
    }
    const int want = std::min(params_.n_max, std::max(n_max, 0));
    scratch_.assign(history.end() - static_cast<std::ptrdiff_t>(n - 1), history.end());
    scratch_.push_back(last);
    if (!all_text(scratch_.data(), n)) return;  // the key holds an image position
    for (int i = 0; i < want; ++i) {
        const TokenId next = pool_->get(scratch_.data() + i);
        if (next == NgramModPool::kEmpty) break;
        scratch_.push_back(next);
    }
    const int got = static_cast<int>(scratch_.size() - n);
    if (got == 0 || got < std::min(params_.n_min, want)) return;
    out.tokens.insert(out.tokens.end(), scratch_.begin() + static_cast<std::ptrdiff_t>(n), scratch_.end());
    n_draft_last_ = static_cast<size_t>(got);
}

void NgramModDrafter::accept(int n_accepted) {
    if (n_draft_last_ == 0) return;
    // Three drafts in a row with less than half accepted: the pool misleads.
    if (static_cast<double>(n_accepted) < 0.5 * static_cast<double>(n_draft_last_)) {
        if (++n_low_ >= 3) {
            pool_->reset();
            n_low_ = 0;
            added_upto_ = 0;
        }
    } else {
        n_low_ = 0;
    }
}

}  // namespace cria::spec
