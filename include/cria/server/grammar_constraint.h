#pragma once
// The grammar module's GrammarSampler as a sampling::Sampler, for the
// grammar slot of a sampling::Chain (response_format, tool calls).
#include <memory>
#include <string>
#include <vector>

#include "cria/grammar/sampler.h"
#include "cria/sampling/sampler.h"

namespace cria::server {

using vocab::TokenId;

class GrammarConstraint final : public sampling::Sampler {
public:
    // Throws cria::Error when the GBNF does not parse.
    GrammarConstraint(std::shared_ptr<const grammar::VocabIndex> index, const vocab::Vocab& vocab, std::string gbnf,
                      grammar::SamplerOptions options);

    std::string_view name() const override { return "grammar"; }
    void apply(sampling::Candidates& candidates) override;
    void accept(TokenId token) override;
    void reset() override;
    // A copy in the same state: a fresh sampler that replays the accepted tokens.
    std::unique_ptr<sampling::Sampler> clone() const override;

private:
    std::shared_ptr<const grammar::VocabIndex> index_;
    std::shared_ptr<const grammar::Grammar> grammar_;
    const vocab::Vocab& vocab_;
    std::string gbnf_;
    grammar::SamplerOptions options_;
    std::unique_ptr<grammar::GrammarSampler> sampler_;
    std::vector<TokenId> accepted_;
    std::vector<grammar::Candidate> scratch_;
};

}  // namespace cria::server
