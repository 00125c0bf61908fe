#pragma once
// draft-dflash: a DFlash block drafter (dflash_head.h) proposes a whole
// block in one forward pass (llama.cpp's common_speculative_impl_draft_dflash;
// protocol in shared/docs/draft-formats.md §4.3).
//
// Each draft() (and observe(), on steps it does not draft) first injects the
// K/V of the target's features of the tokens accepted last step at their
// positions (pos0 .. pos_last-1); then one block [last, MASK x n] at
// pos_last.. gives the drafts from rows 1..n (n <= block_size - 1), chosen
// as llama.cpp does (top-k 10 arg-max, stop below p_min). The block's own
// K/V cells are overwritten by the next injection (the cache is indexed by
// position), which is llama.cpp's KV trim.
//
// draft-dspark is the same drafter on a file with DSpark heads
// (dspark_head.h): the read rows' logits get the Markov bias chained from
// the anchor, the draft stops at the first row whose confidence is below
// p_min (no probability test), and an anchor-first file (sample_from_anchor)
// uses the block [last, MASK x (n-1)], every row read (n <= block_size).

#include <memory>
#include <optional>

#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/spec/draft_model.h"
#include "cria/spec/dflash_head.h"
#include "cria/spec/drafter.h"

namespace cria::spec {

class DflashDrafter final : public Drafter {
public:
    DflashDrafter(std::shared_ptr<const DflashHead> head, const DraftModelParams& params, int32_t n_ctx,
                  int n_threads);
    std::string_view name() const override { return head_->dspark ? "dspark" : "dflash"; }
    void begin(const BeginInput&) override {}
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    void observe(const DraftInput& input) override { (void)take_features(input); }
    int n_max() const override { return n_max_; }
    int n_min() const override { return params_.n_min; }
    bool runs_model() const override { return true; }
    std::vector<uint32_t> target_feature_layers() const override { return head_->target_layers; }

private:
    bool take_features(const DraftInput& input);

    std::shared_ptr<const DflashHead> head_;
    DraftModelParams params_;
    bool anchor_first_;  // DSpark with sample_from_anchor: block row 0 is a draft row
    int n_max_;          // n_max clamped to block_size - 1 (anchor-first: block_size)
    cpu::ThreadPool pool_;
    ops::CpuOps ops_;
    DflashSession session_;
    std::optional<DsparkChain> chain_;  // DSpark files only
    std::vector<float> features_;
    std::vector<int32_t> block_;
};

}  // namespace cria::spec
