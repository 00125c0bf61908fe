#pragma once
// A sampler chain: samplers applied in order to a logit row, the last one
// selecting a token (llama.cpp's llama_sampler_chain + common_sampler).
//
// Grammar slot: a constraint sampler (the GBNF grammar of cria_grammar,
// wrapped as a Sampler that sets disallowed tokens to -inf) can be installed
// with set_grammar(). sample() then follows llama.cpp's common_sampler_sample:
// run the chain, check only the chosen token against the grammar, and if it
// is rejected, start again from the logits with the grammar applied first
// (or always grammar first when asked). accept() feeds the grammar too.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cria/sampling/candidates.h"
#include "cria/sampling/sampler.h"

namespace cria::sampling {

class Chain final : public Sampler {
public:
    Chain() = default;
    Chain(Chain&&) noexcept = default;
    Chain& operator=(Chain&&) noexcept = default;

    void add(std::unique_ptr<Sampler> sampler);
    size_t size() const { return samplers_.size(); }
    const Sampler& at(size_t i) const { return *samplers_.at(i); }
    Sampler& at(size_t i) { return *samplers_.at(i); }

    void set_grammar(std::unique_ptr<Sampler> grammar) { grammar_ = std::move(grammar); }
    bool has_grammar() const { return grammar_ != nullptr; }

    // Sampler interface: apply runs the samplers (not the grammar) in order.
    std::string_view name() const override { return "chain"; }
    void apply(Candidates& candidates) override;
    void accept(TokenId token) override;  // grammar and every sampler
    // Prompt tokens: the samplers' history (penalties, DRY) takes them, the
    // grammar does not — it constrains only what is generated (llama.cpp's
    // common_sampler_accept with accept_grammar = false).
    void accept_prompt(TokenId token);
    void reset() override;
    std::unique_ptr<Sampler> clone() const override;
    Chain copy() const;

    // Fills the reused candidate buffer from the logit row, samples, and
    // returns the chosen token. Does NOT accept it: call accept() (as
    // llama.cpp's common_sampler_accept), so callers can reject drafts.
    // Throws cria::Error when the chain selects nothing.
    TokenId sample(std::span<const float> logits, bool grammar_first = false);
    // The candidates as the last sample() left them (probabilities of the survivors).
    const Candidates& candidates() const { return candidates_; }

    // "logits -> penalties -> top-k -> ... -> dist", as common_sampler_print.
    std::string describe() const;

private:
    std::vector<std::unique_ptr<Sampler>> samplers_;
    std::unique_ptr<Sampler> grammar_;
    Candidates candidates_;
};

}  // namespace cria::sampling
