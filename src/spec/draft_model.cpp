// draft-simple: the draft model drafts token by token in its own context.

#include "cria/spec/draft_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/spec/params.h"
#include "cria/spec/text_positions.h"

namespace cria::spec {

void check_vocab_compatible(const vocab::Vocab& target, const vocab::Vocab& draft) {
    auto fail = [](const std::string& what) {
        throw Error("the draft model's vocabulary does not match the target's: " + what);
    };
    if (target.type() != draft.type()) fail("different tokenizer types");
    if (target.add_bos() != draft.add_bos() || target.bos() != draft.bos()) fail("different BOS handling");
    if (target.add_eos() != draft.add_eos() || target.eos() != draft.eos()) fail("different EOS handling");
    const size_t nt = target.size(), nd = draft.size();
    if ((nt > nd ? nt - nd : nd - nt) > 128)
        fail("sizes " + std::to_string(nt) + " and " + std::to_string(nd) + " differ by more than 128");
    for (size_t i = 0; i < std::min(nt, nd); ++i) {
        const auto id = static_cast<TokenId>(i);
        if (target.token(id).text != draft.token(id).text)
            fail("token " + std::to_string(i) + " is '" + target.token(id).text + "' in the target and '" +
                 draft.token(id).text + "' in the draft");
    }
}

DraftModelDrafter::DraftModelDrafter(std::shared_ptr<const model::Model> model,
                                     const runtime::ContextParams& context_params, const DraftModelParams& params,
                                     int32_t target_n_vocab)
    : params_(params), model_(std::move(model)), ctx_(*model_, context_params), target_n_vocab_(target_n_vocab) {
    if (params.n_max < 1) throw Error("draft: --spec-draft-n-max must be at least 1");
    if (params.n_min < 0 || params.n_min > params.n_max) throw Error("draft: --spec-draft-n-min must be in [0, n-max]");
    if (!(params.p_min >= 0.0f && params.p_min <= 1.0f)) throw Error("draft: --spec-draft-p-min must be in [0, 1]");
}

void DraftModelDrafter::begin(const BeginInput& input) {
    // The prompt is decoded on the first draft() with the first sampled token;
    // whatever the cache holds from an earlier request is reused by prefix.
    sample_ = input.sampling.temp > 0.0f;
    if (!sample_) return;
    // The draft chain shapes the proposal q only; penalties would need the
    // draft's own history and do not change correctness, so they are off.
    // Its seed is the request's (derived by the step): same seed, same drafts.
    auto sp = input.sampling;
    sp.penalty_repeat = 1.0f;
    sp.penalty_freq = 0.0f;
    sp.penalty_present = 0.0f;
    sp.dry_multiplier = 0.0f;
    sp.mirostat = 0;
    sp.ignore_eos = false;  // the target's chain decides about end of generation
    sampling::ChainContext cc;
    cc.n_vocab = static_cast<int32_t>(model_->hparams().n_vocab);
    cc.n_ctx = static_cast<int32_t>(ctx_.n_ctx());
    chain_ = sampling::build_chain(sp, cc);
}

void DraftModelDrafter::decode_missing(const std::vector<TokenId>& sequence) {
    // Keep the common prefix; at least the last token is decoded again so that
    // its logits are fresh.
    size_t keep = 0;
    while (keep < cached_.size() && keep < sequence.size() && cached_[keep] == sequence[keep]) ++keep;
    keep = std::min(keep, sequence.size() - 1);
    if (!ctx_.memory_seq_rm(0, static_cast<int32_t>(keep), -1)) {
        // The draft model's memory cannot drop part of its history (a
        // recurrent state): start over from the first token.
        ctx_.memory_clear();
        keep = 0;
    }
    cached_.resize(keep);
    const size_t n_batch = ctx_.params().n_batch;
    for (size_t first = keep; first < sequence.size(); first += n_batch) {
        const size_t count = std::min(n_batch, sequence.size() - first);
        batch_.clear();
        for (size_t i = 0; i < count; ++i)
            batch_.add(sequence[first + i], static_cast<int32_t>(first + i), {0}, first + i + 1 == sequence.size());
        if (ctx_.decode(batch_) != 0) throw Error("draft: no room in the draft model's KV cache");
        cached_.insert(cached_.end(), sequence.begin() + static_cast<std::ptrdiff_t>(first),
                       sequence.begin() + static_cast<std::ptrdiff_t>(first + count));
    }
}

void DraftModelDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const float p_min = input.p_min_or(params_.p_min);  // the request's, else the drafter's own
    const std::vector<TokenId>& history = input.history;
    const TokenId last = input.last;
    const int want = std::min(params_.n_max, n_max);
    if (want <= 0) return;
    // The draft model has no vision encoder: it reads the text of the
    // history, each image left out, at positions of its own (its proposals
    // are only proposals; the target's verification keeps the output exact).
    sequence_.clear();
    std::copy_if(history.begin(), history.end(), std::back_inserter(sequence_), is_text);
    sequence_.push_back(last);
    if (sequence_.size() + static_cast<size_t>(want) > ctx_.n_ctx()) return;  // the draft's cache is full
    decode_missing(sequence_);

    for (int i = 0; i < want; ++i) {
        const auto logits = ctx_.logits(-1);
        // The top probability, from the raw logits (a greedy chain would say 1).
        const float top = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (float l : logits) sum += std::exp(static_cast<double>(l - top));
        const double p_top = 1.0 / sum;
        TokenId token;
        if (sample_) {
            token = chain_.sample(logits);
        } else {
            token = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        }
        if (token >= target_n_vocab_) break;  // the target cannot produce it
        out.tokens.push_back(token);
        if (sample_) {
            const auto& c = chain_.candidates();
            out.probs.emplace_back(c.begin(), c.end());
        }
        // As llama.cpp: a token drafted below p_min is still proposed, but the
        // draft is too unsure to go on (p from the full softmax of the draft).
        if (i + 1 == want || p_top < p_min) break;
        // Decode the drafted token to draft the next one.
        batch_.clear();
        batch_.add(token, static_cast<int32_t>(cached_.size()), {0}, true);
        if (ctx_.decode(batch_) != 0) break;
        cached_.push_back(token);
    }
}

std::shared_ptr<const model::Model> load_draft_model(const SpecParams& params, const vocab::Vocab& target_vocab) {
    if (params.draft_model.empty()) throw Error("speculative type draft needs a draft model (-md FILE)");
    std::shared_ptr<const model::Model> model = model::Model::load(params.draft_model);
    check_vocab_compatible(target_vocab, vocab::Vocab::from_gguf(model->file()));
    return model;
}

std::unique_ptr<DraftModelDrafter> make_draft_model_drafter(const SpecParams& params, const runtime::Context& target,
                                                            const vocab::Vocab& target_vocab, uint32_t n_ctx,
                                                            std::shared_ptr<const model::Model> model) {
    if (!model) model = load_draft_model(params, target_vocab);
    runtime::ContextParams cp = target.params();
    cp.n_ctx = params.draft_n_ctx ? params.draft_n_ctx : n_ctx;
    cp.n_seq_max = 1;
    cp.embeddings = false;
    cp.pooling = runtime::Pooling::None;
    cp.n_threads = params.draft_threads > 0 ? params.draft_threads : target.n_threads();
    cp.type_k = params.draft_type_k;
    cp.type_v = params.draft_type_v;
    // Drafts stop at a token the target's logit rows lack: the tokenizer's size,
    // or the model's n_vocab for a target without a vocabulary ("no_vocab").
    const auto target_n_vocab = static_cast<int32_t>(target_vocab.size() ? target_vocab.size()
                                                                          : target.model().hparams().n_vocab);
    return std::make_unique<DraftModelDrafter>(std::move(model), cp, params.draft, target_n_vocab);
}

}  // namespace cria::spec
