#pragma once
// The interface every drafter implements (llama.cpp's common_speculative_state).
//
// A drafter proposes tokens that the target model will probably produce next;
// the speculative step (step.h) checks them all in one target batch. The
// drafter sees a DraftInput: the tokens in the target's cache (`history`:
// prompt plus every accepted token), `last`, the token the target sampled
// last, which is not decoded yet (the draft continues after it), their
// positions, and optionally the target's hidden features.
//
// Drafters are registered by name (registry.h) and built by make_drafters.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cria/runtime/batch.h"
#include "cria/sampling/candidates.h"
#include "cria/sampling/params.h"
#include "cria/spec/text_positions.h"

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

// Hidden features of the target, captured during its decode (the residual
// stream entering chosen layers, what EAGLE-3/MTP-style drafters read):
// data[(token * n_layers + layer) * n_embd + i] for the tokens of the last
// target decode of this sequence (empty when no drafter asked for features).
struct FeaturesView {
    const float* data = nullptr;
    size_t n_tokens = 0;   // rows: the tokens of the last target decode of the sequence
    size_t n_layers = 0;   // captured layers per token
    size_t n_embd = 0;     // floats per layer
    int32_t pos0 = 0;      // position of the first row
    const uint32_t* layer_ids = nullptr;  // n_layers target layer ids, in row order (null: not said)
    bool empty() const { return data == nullptr || n_tokens == 0; }
};

// What a drafter drafts from.
struct DraftInput {
    const std::vector<TokenId>& history;  // the target's cache: positions 0 .. pos_last-1 (< 0: an image's)
    TokenId last;                         // sampled by the target, not decoded yet: at position pos_last
    int32_t pos_last;                     // the draft's tokens go to pos_last+1, pos_last+2, ...
    int32_t seq = 0;                      // the target's sequence
    // The target's captured streams (target_feature_layers()) of the tokens
    // the last target decode of this sequence accepted: last step's `last`
    // and accepted drafts, positions pos0 .. pos0 + n_tokens - 1. Empty when
    // no drafter asked for features.
    FeaturesView features;
    // The request's minimum draft probability (a server request's
    // "speculative.p_min"); negative: the drafter's own --spec-draft-p-min.
    float p_min = -1.0f;
    float p_min_or(float own) const { return p_min >= 0.0f ? p_min : own; }
    // The target's input embedding at an image position of `history` (an
    // entry below 0, text_positions.h); null: none known.
    const EmbeddingAt* embedding_at = nullptr;
};

// A new request.
struct BeginInput {
    const std::vector<TokenId>& prompt;   // what the target's cache holds before generation
    // The request's sampling, for drafters that sample (the draft model at
    // temperature > 0 mirrors it so that its proposals are close to the
    // target's). Its seed is already the drafter's own (derived from the
    // request seed): same request seed, same drafts.
    const sampling::SamplingParams& sampling;
};

class Drafter {
public:
    virtual ~Drafter() = default;
    // The name statistics are printed under (llama.cpp's: "ngram_simple", "draft", ...).
    virtual std::string_view name() const = 0;
    // A new request.
    virtual void begin(const BeginInput& input) = 0;
    // Appends at most n_max tokens to `out` (which is empty on entry).
    virtual void draft(const DraftInput& input, int n_max, Draft& out) = 0;
    // A step in which this drafter does not draft (paused by adaptive
    // drafting, another drafter drafted, no room): drafters that read the
    // target's features take in input.features here, as draft() would, so
    // that their state (a draft head's cache) stays in step with the target.
    virtual void observe(const DraftInput& input) { (void)input; }
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
    // The target layers whose entering residual stream this drafter reads
    // (DraftInput::features; n_layer: the stream after the last layer).
    // The caller has the target's context capture them during its decode.
    virtual std::vector<uint32_t> target_feature_layers() const { return {}; }
};

}  // namespace cria::spec
