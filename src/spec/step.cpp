// One speculative step: draft, verify, roll back, feed back (see step.h).

#include "cria/spec/step.h"

#include <algorithm>
#include <string>
#include <utility>

#include "cria/core/error.h"
#include "cria/runtime/context.h"
#include "cria/spec/verify.h"

namespace cria::spec {

namespace {

constexpr uint32_t kDraftSeedStream = 1;
constexpr uint32_t kVerifySeedStream = 2;

}  // namespace

bool ContextMemory::checkpoint_begin(int32_t seq, int32_t n_positions) {
    return ctx_.memory().checkpoint_begin(seq, n_positions);
}

bool ContextMemory::checkpoint_commit(int32_t seq, int32_t n_accepted) {
    return ctx_.memory().checkpoint_commit(seq, n_accepted);
}

uint32_t derive_seed(uint32_t seed, uint32_t stream) {
    if (seed == sampling::kRandomSeed) return seed;
    // A murmur3-style finaliser: nearby seeds and streams give unrelated seeds.
    uint32_t h = seed * 0x9E3779B1u + stream * 0x85EBCA77u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    return h == sampling::kRandomSeed ? 0u : h;
}

SpeculativeStep::SpeculativeStep(std::vector<Drafter*> drafters, bool adaptive, int32_t n_vocab, StepClock clock)
    : drafters_(std::move(drafters)),
      adaptive_enabled_(adaptive),
      n_vocab_(n_vocab),
      clock_(std::move(clock)),
      adaptive_(static_cast<int>(drafters_.size()), adaptive) {
    for (const Drafter* d : drafters_)
        if (!d) throw Error("speculative: null drafter");
}

std::vector<uint32_t> SpeculativeStep::feature_layers() const {
    std::vector<uint32_t> layers;
    for (const Drafter* d : drafters_)
        for (uint32_t l : d->target_feature_layers()) layers.push_back(l);
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    return layers;
}

void SpeculativeStep::begin(int32_t seq, const std::vector<TokenId>& history, const StepRequest& request) {
    end();
    if (checkpoint_) discard();  // a step left behind (its caller never decoded it)
    if (request.n_max < 0) throw Error("speculative: n-max must not be negative");
    seq_ = seq;
    request_ = request;
    features_ = FeaturesView{};
    embedding_at_ = nullptr;
    metrics_ = Metrics{};
    for (const Drafter* d : drafters_) metrics_.drafters.push_back(DrafterMetrics{std::string(d->name())});
    adaptive_ = AdaptiveDrafting(static_cast<int>(drafters_.size()), adaptive_enabled_);
    rng_.reseed(derive_seed(request.sampling.seed, kVerifySeedStream));
    drafting_ = request.n_max > 0 && !drafters_.empty();
    if (!drafting_) return;
    sampling::SamplingParams drafter_sampling = request.sampling;
    drafter_sampling.seed = derive_seed(request.sampling.seed, kDraftSeedStream);
    for (Drafter* d : drafters_) d->begin(BeginInput{history, drafter_sampling});
}

void SpeculativeStep::end() {
    if (!drafting_) return;
    drafting_ = false;
    for (Drafter* d : drafters_) d->end();
}

void SpeculativeStep::pick_draft(const std::vector<TokenId>& history, TokenId last, int n_allowed) {
    draft_.clear();
    drafter_ = -1;
    paused_any_ = false;
    draft_ms_ = 0;
    if (!drafting_) return;
    n_allowed = std::min({n_allowed, request_.n_max, DecodeCostModel::kMaxTokens - 1});
    const DraftInput input{history, last, static_cast<int32_t>(history.size()), seq_, features_, request_.p_min,
                           embedding_at_ ? &embedding_at_ : nullptr};
    // Drafters that read the target's features but do not draft this step
    // still see them, so that their own state stays in step with the target.
    const auto observe_from = [&](size_t first) {
        if (features_.empty()) return;
        for (size_t d = first; d < drafters_.size(); ++d) {
            if (drafters_[d]->target_feature_layers().empty()) continue;
            const double t0 = clock_ms(clock_);
            drafters_[d]->observe(input);
            const double ms = clock_ms(clock_) - t0;
            metrics_.drafters[d].draft_ms += ms;
            metrics_.draft_ms += ms;
        }
    };
    if (n_allowed <= 0) observe_from(0);
    for (size_t d = 0; d < drafters_.size() && n_allowed > 0; ++d) {
        if (request_.only_drafter >= 0 && static_cast<int>(d) != request_.only_drafter) {
            if (!features_.empty() && !drafters_[d]->target_feature_layers().empty()) drafters_[d]->observe(input);
            continue;
        }
        const int n = adaptive_.limit(static_cast<int>(d), n_allowed);
        if (n == 0) {
            paused_any_ = true;  // drafting has not paid for this request
            if (!features_.empty() && !drafters_[d]->target_feature_layers().empty()) drafters_[d]->observe(input);
            continue;
        }
        const double t0 = clock_ms(clock_);
        drafters_[d]->draft(input, n, draft_);
        const double ms = clock_ms(clock_) - t0;
        auto& dm = metrics_.drafters[d];
        dm.draft_ms += ms;
        metrics_.draft_ms += ms;
        ++dm.n_calls;
        draft_.truncate(static_cast<size_t>(n));
        const int n_min = request_.n_min >= 0 ? request_.n_min : drafters_[d]->n_min();
        if (static_cast<int>(draft_.size()) < std::min(n_min, n)) draft_.clear();
        for (TokenId t : draft_.tokens)
            if (t < 0 || t >= n_vocab_) {
                draft_.clear();  // the target cannot verify a token it does not have
                break;
            }
        if (!draft_.empty()) {
            drafter_ = static_cast<int>(d);
            draft_ms_ = ms;
            observe_from(d + 1);
            return;
        }
        draft_.clear();
    }
}

std::span<const TokenId> SpeculativeStep::prepare(const std::vector<TokenId>& history, TokenId last, int n_allowed,
                                                  TargetMemory& memory) {
    if (checkpoint_) throw Error("speculative: prepare() again before finish() or discard()");
    tokens_.clear();
    pick_draft(history, last, n_allowed);
    pos_ = static_cast<int32_t>(history.size());
    if (!draft_.empty()) {
        const auto n = static_cast<int32_t>(draft_.size()) + 1;
        if (!memory.checkpoint_begin(seq_, n)) {
            draft_.clear();
            throw Error("speculative: the target's memory refused a checkpoint of " + std::to_string(n) +
                        " positions on sequence " + std::to_string(seq_) + " (one is already open, or the memory " +
                        "cannot roll back)");
        }
        checkpoint_ = &memory;
    }
    tokens_.assign(1, last);
    tokens_.insert(tokens_.end(), draft_.tokens.begin(), draft_.tokens.end());
    return tokens_;
}

void SpeculativeStep::prepare(const std::vector<TokenId>& history, TokenId last, int n_allowed, TargetMemory& memory,
                              runtime::Batch& batch) {
    const auto tokens = prepare(history, last, n_allowed, memory);
    for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], pos_ + static_cast<int32_t>(i), {seq_}, true);
}

void SpeculativeStep::commit_checkpoint(int32_t n_kept) {
    TargetMemory* memory = std::exchange(checkpoint_, nullptr);
    if (memory && !memory->checkpoint_commit(seq_, n_kept))
        throw Error("speculative: the target's memory refused to keep " + std::to_string(n_kept) + " of the " +
                    std::to_string(draft_.size() + 1) + " verified positions of sequence " + std::to_string(seq_));
}

void SpeculativeStep::discard() {
    tokens_.clear();
    commit_checkpoint(0);
    draft_.clear();
}

void SpeculativeStep::count_draft(int n_drafted, int n_accepted) {
    auto& dm = metrics_.drafters[static_cast<size_t>(drafter_)];
    (void)n_drafted;  // positions are counted as they are verified (finish())
    if (n_accepted > 0) ++dm.n_drafts_accepted;
}

StepOutcome SpeculativeStep::finish(const LogitRow& rows, sampling::Chain& chain, double decode_ms,
                                    std::vector<TokenId>& history, const EmitToken& emit) {
    if (tokens_.empty()) throw Error("speculative: finish() without prepare()");
    const int n_draft = static_cast<int>(draft_.size());
    StepOutcome out;
    out.n_drafted = n_draft;
    if (drafting_) adaptive_.observe_decode(n_draft + 1, decode_ms);
    history.push_back(tokens_.front());  // `last` is decoded now
    tokens_.clear();

    if (n_draft == 0) {
        ++metrics_.n_plain_steps;
        if (paused_any_) ++metrics_.n_paused_steps;
        metrics_.plain_ms += decode_ms;
        if (drafting_) adaptive_.observe_plain_step();
        const auto row = rows(0);
        out.next = chain.sample(row);
        chain.accept(out.next);
        out.done = !emit(out.next, row);
        return out;
    }

    // Counted before anything is emitted: emit() may end the request and report these.
    ++metrics_.n_verify_steps;
    metrics_.verify_ms += decode_ms;
    auto& dm = metrics_.drafters[static_cast<size_t>(drafter_)];
    ++dm.n_drafts;
    dm.n_tokens_drafted += n_draft;
    if (static_cast<int>(dm.position_tried.size()) < n_draft) {
        dm.position_tried.resize(static_cast<size_t>(n_draft), 0);
        dm.position_accepted.resize(static_cast<size_t>(n_draft), 0);
    }

    // Rejection sampling needs the candidates to be exactly the target's
    // distribution: no grammar (it checks only the chosen token).
    const bool rejection = request_.sampling.temp > 0.0f && !chain.has_grammar() &&
                           draft_.probs.size() == draft_.tokens.size();
    int n_accepted = 0;
    // Keeps history, cache, drafter and controller in step, also when a sampler throws.
    auto settle = [&] {
        for (int i = 0; i < n_accepted; ++i) history.push_back(draft_.tokens[static_cast<size_t>(i)]);
        count_draft(n_draft, n_accepted);
        if (drafting_) {
            drafters_[static_cast<size_t>(drafter_)]->accept(n_accepted);
            adaptive_.observe_draft(drafter_, n_draft, n_accepted, draft_ms_);
        }
        commit_checkpoint(1 + n_accepted);  // `last` and the accepted tokens
    };
    try {
        // Row i predicts the token after `last` and the first i draft tokens.
        for (int i = 0; i <= n_draft; ++i) {
            const auto row = rows(i);
            TokenId token;
            bool accepted;
            if (i < n_draft && rejection) {
                chain.sample(row);  // the target's distribution after the chain
                const auto r = rejection_sample(chain.candidates().view(), draft_.probs[static_cast<size_t>(i)],
                                                draft_.tokens[static_cast<size_t>(i)], rng_);
                token = r.token;
                accepted = r.accepted;
            } else {
                token = chain.sample(row);
                accepted = i < n_draft && token == draft_.tokens[static_cast<size_t>(i)];
            }
            chain.accept(token);
            // Counted before the token is emitted, like the totals: a
            // request that ends with it reports this step complete.
            if (i < n_draft) ++dm.position_tried[static_cast<size_t>(i)];
            if (accepted) {
                ++n_accepted;
                ++dm.n_tokens_accepted;
                ++dm.position_accepted[static_cast<size_t>(i)];
            }
            out.next = token;
            // When generation stops inside the draft, the tokens after the
            // stop do not matter; the cache is trimmed all the same.
            if (!emit(token, row)) {
                out.done = true;
                break;
            }
            if (!accepted) break;
        }
    } catch (...) {
        settle();
        throw;
    }
    settle();
    out.n_accepted = n_accepted;
    return out;
}

}  // namespace cria::spec
