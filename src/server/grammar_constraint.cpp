#include "cria/server/grammar_constraint.h"

#include "cria/grammar/gbnf.h"

namespace cria::server {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const grammar::VocabIndex> index, const vocab::Vocab& vocab,
                                     std::string gbnf, grammar::SamplerOptions options)
    : index_(std::move(index)), vocab_(vocab), gbnf_(std::move(gbnf)), options_(std::move(options)) {
    const auto* idx = index_.get();
    grammar_ = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(
        gbnf_, options_.root_rule, [idx](std::string_view text) { return static_cast<int32_t>(idx->find(text)); }));
    sampler_ = std::make_unique<grammar::GrammarSampler>(index_, grammar_, options_);
}

void GrammarConstraint::apply(sampling::Candidates& candidates) {
    scratch_.resize(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) scratch_[i] = {candidates[i].id, candidates[i].logit};
    sampler_->apply(std::span<grammar::Candidate>(scratch_));
    for (size_t i = 0; i < candidates.size(); ++i) candidates[i].logit = scratch_[i].logit;
}

void GrammarConstraint::accept(TokenId token) {
    sampler_->accept(token);
    accepted_.push_back(token);
}

void GrammarConstraint::reset() {
    sampler_->reset();
    accepted_.clear();
}

std::unique_ptr<sampling::Sampler> GrammarConstraint::clone() const {
    auto copy = std::make_unique<GrammarConstraint>(index_, vocab_, gbnf_, options_);
    for (TokenId t : accepted_) copy->accept(t);
    return copy;
}

}  // namespace cria::server
