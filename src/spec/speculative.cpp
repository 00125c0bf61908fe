// The speculative generation loop and the drafter factory (see speculative.h).

#include "cria/spec/speculative.h"

#include <algorithm>
#include <chrono>

#include "cria/core/error.h"
#include "cria/spec/verify.h"

namespace cria::spec {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

Speculator::Speculator(const SpecParams& params, std::vector<std::unique_ptr<Drafter>> drafters)
    : params_(params), drafters_(std::move(drafters)), rng_(params.seed) {
    if (params.n_max < 0) throw Error("speculative: n-max must not be negative");
    for (const auto& d : drafters_)
        if (!d) throw Error("speculative: null drafter");
}

runtime::GenerationResult Speculator::generate(runtime::Context& ctx, const vocab::Vocab& vocab,
                                               sampling::Chain& chain, const std::vector<TokenId>& prompt,
                                               int n_predict, const std::function<bool(TokenId)>& on_token) {
    using runtime::StopReason;
    if (prompt.empty()) throw Error("generate: the prompt is empty");
    if (prompt.size() > ctx.n_ctx())
        throw Error("generate: the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                    std::to_string(ctx.n_ctx()));
    metrics_ = Metrics{};
    for (const auto& d : drafters_) metrics_.drafters.push_back(DrafterMetrics{std::string(d->name())});
    AdaptiveDrafting adaptive(static_cast<int>(drafters_.size()), params_.adaptive);

    // The prompt, as runtime::generate.
    auto t0 = Clock::now();
    ctx.memory_clear();
    const size_t n_batch = ctx.params().n_batch;
    runtime::Batch batch;
    for (size_t first = 0; first < prompt.size(); first += n_batch) {
        const size_t count = std::min(n_batch, prompt.size() - first);
        batch.clear();
        for (size_t i = 0; i < count; ++i)
            batch.add(prompt[first + i], static_cast<int32_t>(first + i), {0}, first + i + 1 == prompt.size());
        if (ctx.decode(batch) != 0) throw Error("generate: no room in the KV cache for the prompt");
    }
    for (TokenId t : prompt) chain.accept_prompt(t);
    for (auto& d : drafters_) d->begin(prompt);
    metrics_.prompt_ms = ms_since(t0);

    runtime::GenerationResult result;
    bool done = false;
    // Emits one target token; false when generation ends with it.
    auto emit = [&](TokenId token) {
        if (vocab.is_eog(token)) {
            result.stop = StopReason::EndOfGeneration;
            return false;
        }
        result.tokens.push_back(token);
        if (on_token && !on_token(token)) {
            result.stop = StopReason::Callback;
            return false;
        }
        return !(n_predict >= 0 && static_cast<int>(result.tokens.size()) >= n_predict);
    };
    if (n_predict == 0) return result;

    std::vector<TokenId> history = prompt;  // the tokens in the target's cache
    TokenId last = chain.sample(ctx.logits(-1));
    chain.accept(last);
    done = !emit(last);

    // Rejection sampling needs the candidates to be exactly the target's
    // distribution: no grammar (it checks only the chosen token).
    const bool stochastic = stochastic_ && !chain.has_grammar();
    Draft draft;
    while (!done) {
        const auto pos = static_cast<int32_t>(history.size());
        if (static_cast<uint32_t>(pos) >= ctx.n_ctx()) {
            result.stop = StopReason::ContextFull;
            break;
        }
        // The largest useful draft: the batch, the context, the request.
        int n_allowed = std::min<int64_t>({params_.n_max, static_cast<int64_t>(n_batch) - 1,
                                           static_cast<int64_t>(ctx.n_ctx()) - pos - 1,
                                           static_cast<int64_t>(DecodeCostModel::kMaxTokens) - 1});
        if (n_predict >= 0) n_allowed = std::min(n_allowed, n_predict - static_cast<int>(result.tokens.size()) - 1);

        draft.clear();
        int used = -1;
        bool paused_any = false;
        double used_draft_ms = 0;
        for (size_t d = 0; d < drafters_.size() && n_allowed > 0; ++d) {
            const int n = adaptive.limit(static_cast<int>(d), n_allowed);
            if (n == 0) {
                paused_any = true;
                continue;
            }
            auto& dm = metrics_.drafters[d];
            const auto td = Clock::now();
            drafters_[d]->draft(history, last, n, draft);
            const double ms = ms_since(td);
            dm.draft_ms += ms;
            metrics_.draft_ms += ms;
            ++dm.n_calls;
            draft.truncate(static_cast<size_t>(n));
            if (static_cast<int>(draft.size()) < std::min(drafters_[d]->n_min(), n)) draft.clear();
            if (!draft.empty()) {
                used = static_cast<int>(d);
                used_draft_ms = ms;
                break;
            }
            draft.clear();
        }
        const int n_draft = static_cast<int>(draft.size());

        batch.clear();
        batch.add(last, pos, {0}, true);
        for (int i = 0; i < n_draft; ++i) batch.add(draft.tokens[static_cast<size_t>(i)], pos + 1 + i, {0}, true);
        const auto tv = Clock::now();
        if (ctx.decode(batch) != 0) {
            result.stop = StopReason::ContextFull;
            break;
        }
        const double verify_ms = ms_since(tv);
        adaptive.observe_decode(n_draft + 1, verify_ms);
        history.push_back(last);

        if (n_draft == 0) {
            ++metrics_.n_plain_steps;
            if (paused_any) ++metrics_.n_paused_steps;
            metrics_.plain_ms += verify_ms;
            adaptive.observe_plain_step();
            last = chain.sample(ctx.logits(0));
            chain.accept(last);
            done = !emit(last);
            continue;
        }
        ++metrics_.n_verify_steps;
        metrics_.verify_ms += verify_ms;

        // Walk the draft: accept while the target agrees.
        int n_accepted = 0;
        TokenId next = 0;
        const bool use_rejection = stochastic && draft.probs.size() == draft.tokens.size();
        for (int i = 0; i <= n_draft && !done; ++i) {
            if (i < n_draft && use_rejection) {
                chain.sample(ctx.logits(i));  // the target's distribution after the chain
                const auto& p = chain.candidates();
                const auto r = rejection_sample(p.view(), draft.probs[static_cast<size_t>(i)],
                                                draft.tokens[static_cast<size_t>(i)], rng_);
                next = r.token;
                chain.accept(next);
                done = !emit(next);
                if (!r.accepted) break;
                ++n_accepted;
                continue;
            }
            next = chain.sample(ctx.logits(i));
            chain.accept(next);
            done = !emit(next);
            if (i == n_draft || next != draft.tokens[static_cast<size_t>(i)]) break;
            ++n_accepted;
        }
        // When generation stopped inside the draft, the tokens after the stop
        // do not matter; the cache is trimmed all the same.
        for (int i = 0; i < n_accepted; ++i) history.push_back(draft.tokens[static_cast<size_t>(i)]);
        ctx.memory_seq_rm(0, static_cast<int32_t>(history.size()), -1);
        last = next;

        drafters_[static_cast<size_t>(used)]->accept(n_accepted);
        auto& dm = metrics_.drafters[static_cast<size_t>(used)];
        ++dm.n_drafts;
        if (n_accepted > 0) ++dm.n_drafts_accepted;
        dm.n_tokens_drafted += n_draft;
        dm.n_tokens_accepted += n_accepted;
        if (static_cast<int>(dm.position_tried.size()) < n_draft) {
            dm.position_tried.resize(static_cast<size_t>(n_draft), 0);
            dm.position_accepted.resize(static_cast<size_t>(n_draft), 0);
        }
        for (int i = 0; i < std::min(n_draft, n_accepted + 1); ++i) {
            ++dm.position_tried[static_cast<size_t>(i)];
            if (i < n_accepted) ++dm.position_accepted[static_cast<size_t>(i)];
        }
        adaptive.observe_draft(used, n_draft, n_accepted, used_draft_ms);
    }
    metrics_.n_tokens_generated = static_cast<int64_t>(result.tokens.size());
    for (auto& d : drafters_) d->end();
    return result;
}

}  // namespace cria::spec
