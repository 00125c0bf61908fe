// draft-mtp: the target's NextN block drafts from its last hidden state.

#include "cria/spec/mtp.h"

#include <algorithm>
#include <cstring>

#include "cria/core/error.h"
#include "cria/spec/eagle3.h"  // pick_draft_row

namespace cria::spec {

MtpDrafter::MtpDrafter(std::shared_ptr<const MtpHead> head, const DraftModelParams& params, int32_t n_ctx,
                       int n_threads)
    : head_(std::move(head)),
      params_(params),
      pool_(std::max(1, n_threads)),
      ops_(pool_),
      session_(head_, ops_, n_ctx, 512) {
    if (params.n_max < 1) throw Error("draft-mtp: --spec-draft-n-max must be at least 1");
    if (params.n_min < 0 || params.n_min > params.n_max)
        throw Error("draft-mtp: --spec-draft-n-min must be in [0, n-max]");
    if (!(params.p_min >= 0.0f && params.p_min <= 1.0f))
        throw Error("draft-mtp: --spec-draft-p-min must be in [0, 1]");
    pending_h_.assign(head_->n_embd, 0.0f);
}

void MtpDrafter::begin(const BeginInput&) {
    std::fill(pending_h_.begin(), pending_h_.end(), 0.0f);
    pending_pos_ = -1;
    taken_pos0_ = -1;
}

bool MtpDrafter::take_features(const DraftInput& input) {
    const FeaturesView& fv = input.features;
    if (fv.empty()) return false;
    const int64_t n = static_cast<int64_t>(fv.n_tokens), d = head_->n_embd;
    if (fv.pos0 < 0 || fv.pos0 + n != input.pos_last || input.pos_last > session_.n_ctx() || fv.n_embd != head_->n_embd ||
        static_cast<int64_t>(input.history.size()) < input.pos_last)
        return false;
    size_t layer = fv.n_layers;  // the row slot of the captured h
    if (fv.layer_ids) {
        for (size_t i = 0; i < fv.n_layers; ++i)
            if (fv.layer_ids[i] == head_->block) layer = i;
    } else if (fv.n_layers == 1) {
        layer = 0;
    }
    if (layer == fv.n_layers) throw Error("draft-mtp: the target did not capture its last hidden state");
    // Already taken (draft() after observe() of the same step).
    if (pending_pos_ == input.pos_last - 1 && taken_pos0_ == fv.pos0) return true;
    const auto h_row = [&](int64_t i) { return fv.data + (static_cast<size_t>(i) * fv.n_layers + layer) * d; };
    // h at pos0-1: the previous step's last row, or zeros where there is none.
    if (pending_pos_ != fv.pos0 - 1) std::fill(pending_h_.begin(), pending_h_.end(), 0.0f);
    for (int64_t first = 0; first < n; first += session_.max_batch()) {
        const int64_t m = std::min<int64_t>(session_.max_batch(), n - first);
        rows_h_.resize(static_cast<size_t>(m * d));
        tokens_.assign(input.history.begin() + fv.pos0 + first, input.history.begin() + fv.pos0 + first + m);
        for (int64_t i = 0; i < m; ++i) {
            const float* src = first + i == 0 ? pending_h_.data() : h_row(first + i - 1);
            std::memcpy(&rows_h_[static_cast<size_t>(i * d)], src, d * sizeof(float));
        }
        // An image position's token is the image's embedding row there (when known).
        input_rows_.assign(static_cast<size_t>(m), nullptr);
        if (input.embedding_at && *input.embedding_at && fv.n_embd == head_->n_embd)
            for (int64_t i = 0; i < m; ++i)
                if (!is_text(tokens_[static_cast<size_t>(i)]))
                    input_rows_[static_cast<size_t>(i)] = (*input.embedding_at)(fv.pos0 + static_cast<int32_t>(first + i));
        session_.decode(tokens_.data(), rows_h_.data(), fv.pos0 + static_cast<int32_t>(first), m, false,
                        input_rows_.data());
    }
    std::memcpy(pending_h_.data(), h_row(n - 1), d * sizeof(float));
    pending_pos_ = input.pos_last - 1;
    taken_pos0_ = fv.pos0;
    return true;
}

void MtpDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const float p_min = input.p_min_or(params_.p_min);  // the request's, else the drafter's own
    (void)take_features(input);
    if (pending_pos_ != input.pos_last - 1) return;  // no h for `last` yet
    const int want = std::min(params_.n_max, n_max);
    int32_t token = input.last;
    h_ = pending_h_;
    for (int i = 0; i < want; ++i) {
        const int32_t pos = input.pos_last + i;
        if (pos >= session_.n_ctx()) break;
        session_.decode(&token, h_.data(), pos, 1, true);
        const auto& logits = session_.last_logits();
        const auto [row, p] = pick_draft_row(ops_, logits.data(), static_cast<int64_t>(logits.size()));
        if (p < p_min) break;  // llama.cpp: this row is not drafted
        token = static_cast<int32_t>(row);
        out.tokens.push_back(token);
        h_ = session_.last_h();
    }
}

}  // namespace cria::spec
