#pragma once
// draft-simple: a separate small model with the target's vocabulary drafts
// token by token (llama.cpp's common_speculative_state_draft).
//
// The draft model has its own context (KV cache, threads, cache types). It
// keeps in its cache the tokens it decoded last time; each call keeps the
// common prefix with the target's history, decodes what is missing, then
// drafts greedily (the request's temperature is 0) or by sampling its own
// chain, built at begin() from the request's sampling (penalties off) and
// seeded from it, so that the verifier can use the draft probabilities and
// the same seed gives the same output. Drafting stops early when the draft
// model's top probability falls below p_min.
//
// make_draft_model_drafter() is the one place a draft model is loaded,
// checked and given its context (cria run, cria speculative and the server).

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
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    int n_max() const override { return params_.n_max; }
    int n_min() const override { return params_.n_min; }
    bool runs_model() const override { return true; }
    runtime::Context& context() { return ctx_; }

private:
    void decode_missing(const std::vector<TokenId>& sequence);
    DraftModelParams params_;
    bool sample_ = false;  // this request samples (temperature > 0): drafts carry probabilities
    std::shared_ptr<const model::Model> model_;
    runtime::Context ctx_;
    sampling::Chain chain_;
    int32_t target_n_vocab_;
    std::vector<TokenId> cached_;  // tokens in the draft's cache, positions 0..
    std::vector<TokenId> sequence_;
    runtime::Batch batch_;
};

struct SpecParams;

// Loads params.draft_model and checks its vocabulary against the target's.
std::shared_ptr<const model::Model> load_draft_model(const SpecParams& params, const vocab::Vocab& target_vocab);

// The draft model's drafter for a target: `model` (from load_draft_model;
// null: loaded here; the server loads it once for every slot) in a context of
// n_ctx positions with the target context's settings unless params
// override them (--spec-draft-threads, --spec-draft-cache-type-k/-v).
// Throws cria::Error.
std::unique_ptr<DraftModelDrafter> make_draft_model_drafter(const SpecParams& params, const runtime::Context& target,
                                                            const vocab::Vocab& target_vocab, uint32_t n_ctx,
                                                            std::shared_ptr<const model::Model> model = nullptr);

}  // namespace cria::spec
