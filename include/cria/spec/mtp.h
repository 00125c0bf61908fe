#pragma once
// draft-mtp: the target's own NextN block (mtp_head.h) drafts from the
// target's last hidden state (llama.cpp's common_speculative_impl_draft_mtp,
// single-head mode; protocol in shared/docs/draft-formats.md §2.5 and the
// drafter fixtures' README §6).
//
// The target exports h = the residual stream after its last layer (capture
// layer n_layer, before the output norm: mimo2's pre-norm h) for the tokens
// it accepted. The block's row at position p pairs the token at p with h at
// p-1: the first accepted row gets the pending h of the previous step (zeros
// at the very start of the prompt), the others the previous row's. Drafting
// decodes (last, h at pos_last-1) at pos_last, then each drafted token with
// the block's own h_next at the next position, greedy over top-k(10) and
// stopping below p_min, as the other heads. Rows written while drafting are
// overwritten by the next call (the cache is indexed by position), which is
// llama.cpp's KV trim. Rejected verification rows are never written: their
// K/V would be trimmed anyway, and causal rows do not see later ones.
#include <memory>

#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/spec/draft_model.h"
#include "cria/spec/drafter.h"
#include "cria/spec/mtp_head.h"

namespace cria::spec {

class MtpDrafter final : public Drafter {
public:
    // n_ctx: the target context's size (the block's cache mirrors its
    // positions); n_layer: the target's trunk (the h it exports).
    MtpDrafter(std::shared_ptr<const MtpHead> head, const DraftModelParams& params, int32_t n_ctx, int n_threads);

    std::string_view name() const override { return "mtp"; }
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    void observe(const DraftInput& input) override { (void)take_features(input); }
    int n_max() const override { return params_.n_max; }
    int n_min() const override { return params_.n_min; }
    bool runs_model() const override { return true; }
    std::vector<uint32_t> target_feature_layers() const override { return {head_->block}; }

private:
    // Writes the rows of the accepted tokens; false when the features do not
    // end right before `last`.
    bool take_features(const DraftInput& input);

    std::shared_ptr<const MtpHead> head_;
    DraftModelParams params_;
    cpu::ThreadPool pool_;
    ops::CpuOps ops_;
    MtpSession session_;
    std::vector<float> pending_h_;  // the target's h at pending_pos_
    int32_t pending_pos_ = -1;
    int32_t taken_pos0_ = -1;       // the first position of the features taken last
    std::vector<float> rows_h_, h_;
    std::vector<int32_t> tokens_;
    std::vector<const float*> input_rows_;  // image positions' embeddings (head_inputs.h)
};

}  // namespace cria::spec
