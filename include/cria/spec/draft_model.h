#pragma once
// draft-simple: a separate small model with the target's vocabulary drafts
// token by token (llama.cpp's common_speculative_state_draft).
//
// The draft model has its own context (KV cache, threads, cache types). It
// keeps in its cache the tokens it decoded last time; each call keeps the
// common prefix with the target's history, decodes what is missing, then
// drafts greedily (temperature 0) or by sampling its own chain (so that the
// verifier can use the draft probabilities). Drafting stops early when the
// draft model's top probability falls below p_min.

#include <memory>
#include <string>

#include "cria/runtime/context.h"
#include "cria/sampling/params.h"
#include "cria/spec/drafter.h"
#include "cria/vocab/vocab.h"

namespace cria::spec {

struct DraftModelParams {
    int n_max = 16;        // --spec-draft-n-max
    int n_min = 0;         // --spec-draft-n-min
    float p_min = 0.75f;   // --spec-draft-p-min
    bool sample = false;   // sample the draft chain and report probabilities (temperature > 0)
    sampling::SamplingParams sampling;  // the draft chain (penalties are not used)
};

// Throws cria::Error naming the difference when the draft vocabulary cannot
// stand in for the target's (type, special tokens, token texts; sizes may
// differ by at most 128 as llama.cpp allows).
void check_vocab_compatible(const vocab::Vocab& target, const vocab::Vocab& draft);

class DraftModelDrafter final : public Drafter {
public:
    // The drafter keeps the model alive and owns its context.
    DraftModelDrafter(std::shared_ptr<const model::Model> model, const runtime::ContextParams& context_params,
                      const DraftModelParams& params, int32_t target_n_vocab);
    std::string_view name() const override { return "draft"; }
    void begin(const std::vector<TokenId>& prompt) override;
    void draft(const std::vector<TokenId>& history, TokenId last, int n_max, Draft& out) override;
    int n_max() const override { return params_.n_max; }
    int n_min() const override { return params_.n_min; }
    bool runs_model() const override { return true; }
    runtime::Context& context() { return ctx_; }

private:
    void decode_missing(const std::vector<TokenId>& sequence);
    DraftModelParams params_;
    std::shared_ptr<const model::Model> model_;
    runtime::Context ctx_;
    sampling::Chain chain_;
    int32_t target_n_vocab_;
    std::vector<TokenId> cached_;  // tokens in the draft's cache, positions 0..
    std::vector<TokenId> sequence_;
    runtime::Batch batch_;
};


}  // namespace cria::spec
