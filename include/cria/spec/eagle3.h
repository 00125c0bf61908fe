#pragma once
// draft-eagle3: an EAGLE-3 head (eagle3_head.h) drafts from the target's own
// hidden states (llama.cpp's common_speculative_impl_draft_eagle3; protocol
// in shared/docs/draft-formats.md §3.3).
//
// The head's KV cache row at position P holds the pair (token at P+1, g at
// P), g = fc(features of the target at P). Each draft() gets the features
// of the tokens the target accepted last step (positions pos0 .. pos_last-1)
// and writes their rows: every token at P+1 is known by then, the last one
// being `last`. That last row (last, g at pos_last-1) is llama.cpp's
// "deferred" seed row; its logits give the first draft token. Each drafted
// token is then fed with the previous row's pre-norm output as its g at the
// next position. Rows written while drafting are overwritten by the next
// call (the cache is indexed by position), which is llama.cpp's KV trim.
//
// Draft tokens are the arg-max of the draft logits (mapped through d2t);
// drafting stops before a row whose top probability, the softmax of its 10
// best logits as llama.cpp's top-k(10) draft sampler computes it, is below
// p_min. The draft carries no probabilities: verification samples the target
// and compares, so the output keeps the target's distribution.

#include <memory>

#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/spec/draft_model.h"
#include "cria/spec/drafter.h"
#include "cria/spec/eagle3_head.h"

namespace cria::spec {

class Eagle3Drafter final : public Drafter {
public:
    // n_ctx: the target context's size (the head's cache mirrors its positions).
    Eagle3Drafter(std::shared_ptr<const Eagle3Head> head, const DraftModelParams& params, int32_t n_ctx,
                  int n_threads);
    std::string_view name() const override { return "eagle3"; }
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    void observe(const DraftInput& input) override { (void)take_features(input); }
    int n_max() const override { return params_.n_max; }
    int n_min() const override { return params_.n_min; }
    bool runs_model() const override { return true; }
    std::vector<uint32_t> target_feature_layers() const override { return head_->target_layers; }

private:
    // Writes the cache rows of the features' positions (the last one, the
    // pair (last, g at pos_last-1), leaves its logits for the first draft
    // token); false when the features do not end right before `last`.
    bool take_features(const DraftInput& input);
    std::shared_ptr<const Eagle3Head> head_;
    DraftModelParams params_;
    cpu::ThreadPool pool_;
    ops::CpuOps ops_;
    Eagle3Session session_;
    std::vector<float> features_, g_;
    std::vector<int32_t> tokens_, positions_;
    std::vector<const float*> input_rows_;  // image positions' embeddings (head_inputs.h)
};

// The feature rows of `view` for `layers` (in that order), concatenated per
// token: out[t] = [view(t, layers[0]) ; view(t, layers[1]) ; ...]. The view's
// layers are `view_layers` (the captured set). Throws cria::Error when one is
// missing.
void gather_features(const FeaturesView& view, const std::vector<uint32_t>& view_layers,
                     const std::vector<uint32_t>& layers, std::vector<float>& out);

// llama.cpp's draft token choice (top-k 10, softmax at temperature 1): the
// arg-max row of n logits (lowest row on ties) and its probability among
// the 10 best, which --spec-draft-p-min is compared with. Shared by the
// drafter heads (EAGLE-3, DFlash).
std::pair<int64_t, double> pick_draft_row(ops::Ops& ops, const float* logits, int64_t n);

}  // namespace cria::spec
