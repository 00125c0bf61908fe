#include "cria/sampling/chain.h"

#include <cmath>
#include <limits>

#include "cria/core/error.h"

namespace cria::sampling {

void Chain::add(std::unique_ptr<Sampler> sampler) {
    if (!sampler) {
        throw Error("sampling: cannot add an empty sampler to a chain");
    }
    samplers_.push_back(std::move(sampler));
}

void Chain::apply(Candidates& candidates) {
    for (auto& sampler : samplers_) {
        sampler->apply(candidates);
    }
}

void Chain::accept(TokenId token) {
    if (grammar_) {
        grammar_->accept(token);
    }
    for (auto& sampler : samplers_) {
        sampler->accept(token);
    }
}

void Chain::accept_prompt(TokenId token) {
    for (auto& sampler : samplers_) {
        sampler->accept(token);
    }
}

void Chain::reset() {
    if (grammar_) {
        grammar_->reset();
    }
    for (auto& sampler : samplers_) {
        sampler->reset();
    }
}

Chain Chain::copy() const {
    Chain result;
    for (const auto& sampler : samplers_) {
        result.samplers_.push_back(sampler->clone());
    }
    if (grammar_) {
        result.grammar_ = grammar_->clone();
    }
    return result;
}

std::unique_ptr<Sampler> Chain::clone() const { return std::make_unique<Chain>(copy()); }

TokenId Chain::sample(std::span<const float> logits, bool grammar_first) {
    if (logits.empty()) {
        throw Error("sampling: empty logit row");
    }
    candidates_.fill(logits);
    if (grammar_ && grammar_first) {
        grammar_->apply(candidates_);
    }
    apply(candidates_);
    TokenId token = candidates_.selected_token();
    if (!grammar_ || grammar_first) {
        return token;
    }

    // Grammar by rejection: checking one token is far cheaper than
    // constraining the whole vocabulary, and usually the token is fine.
    Candidates single;
    const Candidate probe[1] = {Candidate{token, 1.0f, 0.0f}};
    single.assign(probe);
    grammar_->apply(single);
    if (single[0].logit != -std::numeric_limits<float>::infinity()) {
        return token;
    }

    // Rejected: constrain first, then run the chain again on fresh logits.
    candidates_.fill(logits);
    grammar_->apply(candidates_);
    apply(candidates_);
    return candidates_.selected_token();
}

std::string Chain::describe() const {
    std::string text = "logits";
    for (const auto& sampler : samplers_) {
        text += " -> ";
        text += sampler->name();
    }
    return text;
}

}  // namespace cria::sampling
