#pragma once
// The interface every drafter implements (llama.cpp's common_speculative_state).
//
// A drafter proposes tokens that the target model will probably produce next;
// the verifier (speculative.h) checks them all in one target batch. The
// drafter sees the tokens in the target's cache (`history`: prompt plus every
// accepted token) and `last`, the token the target sampled last, which is
// not decoded yet: the draft continues after `last`.

#include <string_view>
#include <vector>

#include "cria/runtime/batch.h"
#include "cria/sampling/candidates.h"

namespace cria::spec {

using runtime::TokenId;

struct Draft {
    std::vector<TokenId> tokens;
    // Either empty (the drafter has no probabilities: the verifier samples the
    // target and compares), or one distribution per token: the drafter's q,
    // the candidates it sampled tokens[i] from, with their probabilities.
    std::vector<std::vector<sampling::Candidate>> probs;

    void clear() {
        tokens.clear();
        probs.clear();
    }
    size_t size() const { return tokens.size(); }
    bool empty() const { return tokens.empty(); }
    void truncate(size_t n) {
        if (tokens.size() > n) tokens.resize(n);
        if (probs.size() > n) probs.resize(n);
    }
};

class Drafter {
public:
    virtual ~Drafter() = default;
    // The name statistics are printed under (llama.cpp's: "ngram_simple", "draft", ...).
    virtual std::string_view name() const = 0;
    // A new request: `prompt` is what the target's cache holds before generation.
    virtual void begin(const std::vector<TokenId>& prompt) = 0;
    // Appends at most n_max tokens to `out` (which is empty on entry).
    virtual void draft(const std::vector<TokenId>& history, TokenId last, int n_max, Draft& out) = 0;
    // How many tokens of the last non-empty draft the target accepted.
    virtual void accept(int n_accepted) { (void)n_accepted; }
    // The request is over (ngram-cache saves its dynamic statistics here).
    virtual void end() {}
    // The longest draft it ever proposes, and the shortest worth verifying
    // (a shorter draft is dropped, as llama.cpp's --spec-draft-n-min).
    virtual int n_max() const = 0;
    virtual int n_min() const { return 0; }
    // A drafter that runs a model: drafting costs time per token.
    virtual bool runs_model() const { return false; }
};

}  // namespace cria::spec
