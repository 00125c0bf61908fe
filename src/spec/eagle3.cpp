// draft-eagle3: the EAGLE-3 head drafts from the target's captured features.

#include "cria/spec/eagle3.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cria/core/error.h"

namespace cria::spec {

void gather_features(const FeaturesView& view, const std::vector<uint32_t>& view_layers,
                     const std::vector<uint32_t>& layers, std::vector<float>& out) {
    if (view_layers.size() != view.n_layers)
        throw Error("eagle3 draft: the target captured " + std::to_string(view.n_layers) + " layers, " +
                    std::to_string(view_layers.size()) + " named");
    std::vector<size_t> slot;
    for (uint32_t l : layers) {
        const auto it = std::find(view_layers.begin(), view_layers.end(), l);
        if (it == view_layers.end())
            throw Error("eagle3 draft: the target did not capture layer " + std::to_string(l));
        slot.push_back(static_cast<size_t>(it - view_layers.begin()));
    }
    const size_t e = view.n_embd, w = layers.size() * e;
    out.resize(view.n_tokens * w);
    for (size_t t = 0; t < view.n_tokens; ++t)
        for (size_t j = 0; j < slot.size(); ++j)
            std::memcpy(&out[t * w + j * e], view.data + (t * view.n_layers + slot[j]) * e, e * sizeof(float));
}

Eagle3Drafter::Eagle3Drafter(std::shared_ptr<const Eagle3Head> head, const DraftModelParams& params, int32_t n_ctx,
                             int n_threads)
    : head_(std::move(head)),
      params_(params),
      pool_(std::max(1, n_threads)),
      ops_(pool_),
      session_(head_, ops_, n_ctx, 512) {
    if (params.n_max < 1) throw Error("draft-eagle3: --spec-draft-n-max must be at least 1");
    if (params.n_min < 0 || params.n_min > params.n_max)
        throw Error("draft-eagle3: --spec-draft-n-min must be in [0, n-max]");
    if (!(params.p_min >= 0.0f && params.p_min <= 1.0f))
        throw Error("draft-eagle3: --spec-draft-p-min must be in [0, 1]");
}

void Eagle3Drafter::begin(const BeginInput&) {
    // Nothing to keep across requests: every draft() rewrites the cache rows
    // of the positions its features cover, and the prompt's features cover
    // the whole prompt.
}

std::pair<int64_t, double> pick_draft_row(ops::Ops& ops, const float* logits, int64_t n) {
    const auto row = ops::TensorView::contiguous(ElementType::F32, logits, {n});
    const auto top = ops.top_k(row, std::min<int64_t>(10, n));
    double sum = 0.0;
    for (const auto& [id, l] : top) sum += std::exp(static_cast<double>(l) - static_cast<double>(top[0].second));
    return {top[0].first, 1.0 / sum};
}

bool Eagle3Drafter::take_features(const DraftInput& input) {
    const FeaturesView& fv = input.features;
    if (fv.empty()) return false;
    // The features must end right before `last`: rows pos0 .. pos_last-1.
    const int64_t n = static_cast<int64_t>(fv.n_tokens);
    if (fv.pos0 < 0 || fv.pos0 + n != input.pos_last || input.pos_last > session_.n_ctx()) return false;
    std::vector<uint32_t> view_layers;
    if (fv.layer_ids) view_layers.assign(fv.layer_ids, fv.layer_ids + fv.n_layers);
    else {  // the captured set is this drafter's layers, sorted
        view_layers = head_->target_layers;
        std::sort(view_layers.begin(), view_layers.end());
        view_layers.erase(std::unique(view_layers.begin(), view_layers.end()), view_layers.end());
    }
    gather_features(fv, view_layers, head_->target_layers, features_);
    const size_t d = head_->n_embd;
    g_.resize(static_cast<size_t>(n) * d);
    session_.encode(features_.data(), n, g_.data());

    // Rows (token at P+1, g at P) for P = pos0 .. pos_last-1.
    tokens_.resize(static_cast<size_t>(n));
    positions_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
        const int64_t next = fv.pos0 + k + 1;
        tokens_[static_cast<size_t>(k)] =
            next < input.pos_last ? input.history[static_cast<size_t>(next)] : input.last;
        positions_[static_cast<size_t>(k)] = static_cast<int32_t>(fv.pos0 + k);
    }
    // An image position's token is the image's embedding row there (when
    // the caller knows it and it has the head's width).
    input_rows_.assign(static_cast<size_t>(n), nullptr);
    if (input.embedding_at && *input.embedding_at && head_->n_embd == head_->n_embd_target)
        for (int64_t k = 0; k < n; ++k)
            if (!is_text(tokens_[static_cast<size_t>(k)]))
                input_rows_[static_cast<size_t>(k)] = (*input.embedding_at)(positions_[static_cast<size_t>(k)] + 1);
    for (int64_t first = 0; first < n; first += session_.max_batch()) {
        const int64_t m = std::min<int64_t>(session_.max_batch(), n - first);
        session_.decode(&tokens_[static_cast<size_t>(first)], &g_[static_cast<size_t>(first) * d],
                        &positions_[static_cast<size_t>(first)], m, &input_rows_[static_cast<size_t>(first)]);
    }
    return true;
}

void Eagle3Drafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const float p_min = input.p_min_or(params_.p_min);  // the request's, else the drafter's own
    const int want = std::min(params_.n_max, n_max);
    if (want <= 0) {
        (void)take_features(input);
        return;
    }
    if (!take_features(input)) return;
    if (input.pos_last + want - 1 > session_.n_ctx()) return;  // no room for the draft rows
    const size_t d = head_->n_embd;

    // Chain: each drafted token with the previous row's pre-norm output.
    std::vector<float> g(d);
    for (int i = 0; i < want; ++i) {
        const auto [row, p] = pick_draft_row(ops_, session_.last_logits().data(),
                                             static_cast<int64_t>(session_.last_logits().size()));
        if (p < p_min) break;  // llama.cpp: this row is not drafted
        const int32_t token = head_->target_token(row);
        out.tokens.push_back(token);
        if (i + 1 == want) break;
        g = session_.last_hidden();
        const int32_t pos = input.pos_last + i;
        session_.decode(&token, g.data(), &pos, 1);
    }
}

}  // namespace cria::spec
