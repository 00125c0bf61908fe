// draft-dflash: the DFlash head drafts a block from the target's features.

#include "cria/spec/dflash.h"

#include <algorithm>

#include "cria/core/error.h"
#include "cria/spec/eagle3.h"  // gather_features, pick_draft_row

namespace cria::spec {

DflashDrafter::DflashDrafter(std::shared_ptr<const DflashHead> head, const DraftModelParams& params, int32_t n_ctx,
                             int n_threads)
    : head_(std::move(head)),
      params_(params),
      anchor_first_(head_->dspark && head_->dspark->sample_from_anchor),
      n_max_(std::min(params.n_max, static_cast<int>(head_->block_size) - (anchor_first_ ? 0 : 1))),
      pool_(std::max(1, n_threads)),
      ops_(pool_),
      session_(head_, ops_, n_ctx, 512) {
    if (params.n_max < 1) throw Error("draft-dflash: --spec-draft-n-max must be at least 1");
    if (params.n_min < 0 || params.n_min > params.n_max)
        throw Error("draft-dflash: --spec-draft-n-min must be in [0, n-max]");
    if (!(params.p_min >= 0.0f && params.p_min <= 1.0f))
        throw Error("draft-dflash: --spec-draft-p-min must be in [0, 1]");
    if (head_->dspark) chain_.emplace(*head_->dspark, ops_, head_->n_embd, head_->n_vocab_draft);
}

bool DflashDrafter::take_features(const DraftInput& input) {
    const FeaturesView& fv = input.features;
    if (fv.empty()) return false;
    const int64_t n = static_cast<int64_t>(fv.n_tokens);
    if (fv.pos0 < 0 || fv.pos0 + n != input.pos_last || input.pos_last > session_.n_ctx()) return false;
    std::vector<uint32_t> view_layers;
    if (fv.layer_ids) view_layers.assign(fv.layer_ids, fv.layer_ids + fv.n_layers);
    else {
        view_layers = head_->target_layers;
        std::sort(view_layers.begin(), view_layers.end());
        view_layers.erase(std::unique(view_layers.begin(), view_layers.end()), view_layers.end());
    }
    gather_features(fv, view_layers, head_->target_layers, features_);
    session_.inject(features_.data(), n, fv.pos0);
    return true;
}

void DflashDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const float p_min = input.p_min_or(params_.p_min);  // the request's, else the drafter's own
    if (!take_features(input)) return;
    const int want = std::min(n_max_, n_max);
    // The block always has n_max_ draft rows, however many drafts are wanted:
    // its rows see each other, so its length changes every row's logits (and
    // llama.cpp drafts the whole block, then cuts the result).
    const int n_block = anchor_first_ ? n_max_ : n_max_ + 1, first = anchor_first_ ? 0 : 1;
    if (want <= 0 || input.pos_last + n_block > session_.n_ctx()) return;
    block_.assign(static_cast<size_t>(n_block), head_->mask_token);
    block_[0] = input.last;
    session_.block(block_.data(), n_block, input.pos_last);
    int32_t prev = input.last;  // DSpark's Markov chain starts at the anchor
    for (int i = 0; i < want; ++i) {
        const int64_t row = first + i;
        if (chain_) {
            // DSpark: the confidence head alone decides where the block is cut.
            const float conf = chain_->apply(session_, row, prev);
            if (p_min > 0.0f && conf < p_min) break;
            prev = head_->target_token(pick_draft_row(ops_, session_.logits(row), head_->n_vocab_draft).first);
            out.tokens.push_back(prev);
            continue;
        }
        const auto [r, p] = pick_draft_row(ops_, session_.logits(row), head_->n_vocab_draft);
        if (p < p_min) break;  // llama.cpp: this row is not drafted
        out.tokens.push_back(head_->target_token(r));
    }
}

}  // namespace cria::spec
