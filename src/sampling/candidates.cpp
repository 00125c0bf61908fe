#include "cria/sampling/candidates.h"

#include <cmath>
#include <limits>

#include "cria/core/error.h"

namespace cria::sampling {

namespace {
float sanitized(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }
}  // namespace

void Candidates::fill(std::span<const float> logits) {
    storage_.resize(logits.size());  // no allocation once grown to the vocabulary size
    for (size_t i = 0; i < logits.size(); ++i) {
        storage_[i] = Candidate{static_cast<TokenId>(i), sanitized(logits[i]), 0.0f};
    }
    offset_ = 0;
    size_ = logits.size();
    sorted_ = false;
    selected_ = -1;
}

void Candidates::assign(std::span<const Candidate> candidates) {
    storage_.assign(candidates.begin(), candidates.end());
    for (Candidate& c : storage_) {
        c.logit = sanitized(c.logit);
    }
    offset_ = 0;
    size_ = storage_.size();
    sorted_ = false;
    selected_ = -1;
}

void Candidates::truncate(size_t n) {
    if (n > size_) {
        throw Error("candidates: cannot truncate " + std::to_string(size_) + " candidates to " + std::to_string(n));
    }
    size_ = n;
}

void Candidates::drop_front(size_t n) {
    if (n > size_) {
        throw Error("candidates: cannot drop " + std::to_string(n) + " of " + std::to_string(size_) + " candidates");
    }
    offset_ += n;
    size_ -= n;
    if (selected_ >= 0) {
        selected_ = -1;
    }
}

TokenId Candidates::selected_token() const {
    if (selected_ < 0 || static_cast<size_t>(selected_) >= size_) {
        throw Error("sampling: no token was selected (the chain needs a selecting sampler such as dist or greedy)");
    }
    return data()[selected_].id;
}

}  // namespace cria::sampling
