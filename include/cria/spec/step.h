#pragma once
// One speculative step on one sequence of the target: the only generation
// step of speculative decoding. `cria run` and `cria speculative` loop over
// it (Speculator::generate); the server runs one per slot and puts several
// slots' verify batches into one target decode. A step is split in two
// around the target's decode so that the caller owns the batch:
//
//   prepare(history, last, n_allowed, memory)
//       picks a drafter (the one selection loop: drafters in order, each
//       limited by adaptive drafting, the first non-empty draft long enough
//       wins) and returns the tokens to decode for this sequence,
//       [last, d1..dn] at positions history.size() .. history.size()+n,
//       every one with logits. With a draft, it opens a checkpoint of those
//       n+1 positions in the target's memory (TargetMemory).
//   ... the caller decodes them, alone or in a batch with other sequences
//       (when that decode fails: discard()) ...
//   finish(rows, chain, decode_ms, history, emit)
//       verifies the draft against the target's rows (row i predicts the
//       token after last, d1..di) and emits what the target produces:
//         - rejection sampling (verify.h) when the draft has probabilities
//           and the request samples (temperature > 0, no grammar: the
//           candidates must be exactly the target's distribution);
//         - sample-and-compare otherwise: the target's chain samples each
//           row in order and a draft token is kept while it equals the
//           sample. At temperature 0 the output is plain decoding's.
//       Then it appends `last` and the accepted tokens to `history`, commits
//       the checkpoint with the 1 + n_accepted positions kept (the memory
//       forgets the rejected ones), tells the drafter accept(n), feeds
//       adaptive drafting the decode time and the outcome, and counts
//       everything in metrics().
//
// With nothing drafted (speculation off, paused, nothing found) a step is a
// plain decode of `last`: the same path, one row.
//
// Seeds: begin() derives from the request's seed one seed for the drafters
// (the draft model's chain) and one for rejection sampling, so the same
// request seed gives the same output, and the two never draw the same
// uniforms (which would bias the acceptance test).

#include <functional>
#include <span>
#include <vector>

#include "cria/runtime/batch.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/params.h"
#include "cria/sampling/rng.h"
#include "cria/spec/adaptive.h"
#include "cria/spec/drafter.h"
#include "cria/spec/metrics.h"
#include "cria/spec/step_clock.h"

namespace cria::runtime {
class Context;
}

namespace cria::spec {

// The target's memory as a step sees it: memory::Memory's checkpoints, the
// one place speculation changes the target's memory. Before the target
// decodes a verify batch [last, d1..dn] of a sequence, the step calls
// checkpoint_begin(seq, n + 1); after verification
// checkpoint_commit(seq, 1 + n_accepted): `last` and the accepted draft
// tokens stay, the rest is forgotten (a KV cache removes the cells, a
// recurrent state goes back to the state after the last kept position, so
// memories that cannot truncate roll back too). A plain step (nothing
// drafted) opens no checkpoint. Both return false, changing nothing, when
// the memory refuses; the step then throws cria::Error.
class TargetMemory {
public:
    virtual ~TargetMemory() = default;
    virtual bool checkpoint_begin(int32_t seq, int32_t n_positions) = 0;
    virtual bool checkpoint_commit(int32_t seq, int32_t n_accepted) = 0;
};

// A runtime::Context's memory (ctx.memory(): its HybridMemory router).
class ContextMemory final : public TargetMemory {
public:
    explicit ContextMemory(runtime::Context& ctx) : ctx_(ctx) {}
    bool checkpoint_begin(int32_t seq, int32_t n_positions) override;
    bool checkpoint_commit(int32_t seq, int32_t n_accepted) override;

private:
    runtime::Context& ctx_;
};

// The target's logit row of the i-th token of the prepared tokens.
using LogitRow = std::function<std::span<const float>(int i)>;

// Receives every token the step emits (end-of-generation tokens too) with
// the row it was sampled from; returns false when generation ends with it.
using EmitToken = std::function<bool(TokenId token, std::span<const float> logits)>;

// A seed for one purpose (stream) from a request seed; kRandomSeed stays random.
uint32_t derive_seed(uint32_t seed, uint32_t stream);

// What one request asks of speculation.
struct StepRequest {
    int n_max = 16;         // most tokens drafted per step (0: decode plainly)
    int n_min = -1;         // shorter drafts are not verified (-1: each drafter's own n_min)
    int only_drafter = -1;  // draft only with this drafter (its index), -1: any
    float p_min = -1.0f;    // drafters' minimum draft probability (-1: each drafter's own)
    // The request's sampling: temperature > 0 makes the verifier use
    // rejection sampling on drafts with probabilities; drafters that sample
    // mirror it; its seed seeds drafting and verification.
    sampling::SamplingParams sampling;
};

struct StepOutcome {
    int n_drafted = 0;
    int n_accepted = 0;
    bool done = false;  // emit() returned false: generation ended in this step
    TokenId next = 0;   // the last token emitted: the next step's `last`
};

class SpeculativeStep {
public:
    // `drafters` are owned by the caller and outlive the step (a server
    // slot keeps its own across requests); they are asked in this order.
    // n_vocab: the target's; drafts with other token ids are dropped.
    // `clock` times the drafts (and a caller's decodes, see clock()); empty: steady_clock.
    SpeculativeStep(std::vector<Drafter*> drafters, bool adaptive, int32_t n_vocab, StepClock clock = {});

    // A new request on sequence `seq` whose cache holds `history` (the
    // prompt). Resets the metrics and adaptive drafting, begins the drafters.
    void begin(int32_t seq, const std::vector<TokenId>& history, const StepRequest& request);
    // Drafts at most n_allowed tokens (the caller's bound: batch room,
    // context, tokens the request may still get) and returns the tokens to
    // decode: [last, d1..dn], positions history.size() onwards. With a draft
    // it opens a checkpoint of n+1 positions in `memory` (which must hold
    // exactly `history` for this sequence and outlive finish()); throws
    // cria::Error, with no checkpoint open, when the memory refuses it.
    std::span<const TokenId> prepare(const std::vector<TokenId>& history, TokenId last, int n_allowed,
                                     TargetMemory& memory);
    // prepare(), appended to `batch` for this step's sequence.
    void prepare(const std::vector<TokenId>& history, TokenId last, int n_allowed, TargetMemory& memory,
                 runtime::Batch& batch);
    // See above. Exceptions (a failing sampler) leave history and cache
    // consistent: what was accepted before stays, the rest is rolled back.
    // Throws cria::Error when the memory refuses the commit.
    StepOutcome finish(const LogitRow& rows, sampling::Chain& chain, double decode_ms, std::vector<TokenId>& history,
                       const EmitToken& emit);
    // The prepared tokens were not decoded (the decode failed): closes the
    // checkpoint keeping none of them, so the memory holds `history` again,
    // and forgets the prepared step. Throws cria::Error when the memory
    // refuses (the checkpoint is forgotten all the same).
    void discard();
    // The request is over (ngram-cache saves its statistics). Safe to call
    // twice, and from inside emit(): finish() then skips the drafter's accept().
    void end();

    // The union of the drafters' target_feature_layers(), sorted: the layers
    // the caller has the target capture (runtime::ContextParams::capture_layers).
    std::vector<uint32_t> feature_layers() const;
    // The target's captured streams of the tokens the last step accepted,
    // given to the drafters with the next draft (a view: it must stay valid
    // until the next prepare()).
    void set_target_features(const FeaturesView& features) { features_ = features; }
    // Where the request's image positions (history entries < 0) find the
    // embeddings the target read there (DraftInput::embedding_at); empty:
    // nowhere (a prompt without images). begin() forgets it: set it after.
    void set_input_embeddings(EmbeddingAt embedding_at) { embedding_at_ = std::move(embedding_at); }

    // The clock the caller times its target decodes with (finish()'s decode_ms).
    const StepClock& clock() const { return clock_; }
    bool drafting() const { return drafting_; }
    int32_t seq() const { return seq_; }
    size_t n_drafters() const { return drafters_.size(); }
    const Metrics& metrics() const { return metrics_; }
    Metrics& metrics() { return metrics_; }

private:
    void pick_draft(const std::vector<TokenId>& history, TokenId last, int n_allowed);
    void count_draft(int n_drafted, int n_accepted);
    // Commits the open checkpoint, if any, keeping n_kept positions.
    void commit_checkpoint(int32_t n_kept);

    std::vector<Drafter*> drafters_;
    bool adaptive_enabled_;
    int32_t n_vocab_;
    StepClock clock_;
    AdaptiveDrafting adaptive_;
    Metrics metrics_;
    sampling::Rng rng_;           // rejection sampling's uniforms
    StepRequest request_;
    int32_t seq_ = 0;
    bool drafting_ = false;       // the drafters began this request
    // The prepared step.
    Draft draft_;
    int drafter_ = -1;            // whose draft, -1: none
    bool paused_any_ = false;     // a drafter was skipped by adaptive drafting
    double draft_ms_ = 0;
    std::vector<TokenId> tokens_; // [last, d1..dn]
    int32_t pos_ = 0;             // position of `last`
    FeaturesView features_;       // the target's streams for the next draft
    EmbeddingAt embedding_at_;    // the image positions' input embeddings
    TargetMemory* checkpoint_ = nullptr;  // the memory holding this step's open checkpoint
};

}  // namespace cria::spec
