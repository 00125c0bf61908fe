// Speculative generation: the prompt, then a loop over the speculative step.

#include "cria/spec/speculative.h"

#include <algorithm>

#include "cria/core/error.h"

namespace cria::spec {

namespace {

sampling::SamplingParams greedy() {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    return sp;
}

}  // namespace

std::vector<Drafter*> Speculator::pointers(const std::vector<std::unique_ptr<Drafter>>& drafters) {
    std::vector<Drafter*> out;
    for (const auto& d : drafters) {
        if (!d) throw Error("speculative: null drafter");
        out.push_back(d.get());
    }
    return out;
}

Speculator::Speculator(const SpecParams& params, std::vector<std::unique_ptr<Drafter>> drafters)
    : params_(params),
      drafters_(std::move(drafters)),
      step_(pointers(drafters_), params.adaptive, -1, params.clock),
      sampling_(greedy()) {
    if (params.n_max < 0) throw Error("speculative: n-max must not be negative");
}

void Speculator::set_sampling(const sampling::SamplingParams& sampling) {
    sampling_ = sampling;
    request_seeds_.reseed(sampling.seed);
}

runtime::GenerationResult Speculator::generate(runtime::Context& ctx, const vocab::Vocab& vocab,
                                               sampling::Chain& chain, const std::vector<TokenId>& prompt,
                                               int n_predict, const std::function<bool(TokenId)>& on_token) {
    DecodedPrompt tokens;
    tokens.positions = prompt;
    tokens.decode = [&prompt](runtime::Context& c, size_t n, std::vector<float>* features) {
        const size_t n_batch = c.params().n_batch;
        runtime::Batch batch;
        for (size_t first = 0; first < n; first += n_batch) {
            const size_t count = std::min(n_batch, n - first);
            batch.clear();
            for (size_t i = 0; i < count; ++i)
                batch.add(prompt[first + i], static_cast<int32_t>(first + i), {0}, features || first + i + 1 == n);
            if (c.decode(batch) != 0) throw Error("generate: no room in the KV cache for the prompt");
            if (features)
                features->insert(features->end(), c.features(0).data(),
                                 c.features(0).data() + count * c.params().capture_layers.size() *
                                                            c.model().hparams().n_embd);
        }
    };
    return generate(ctx, vocab, chain, tokens, n_predict, on_token);
}

runtime::GenerationResult Speculator::generate(runtime::Context& ctx, const vocab::Vocab& vocab,
                                               sampling::Chain& chain, const DecodedPrompt& decoded,
                                               int n_predict, const std::function<bool(TokenId)>& on_token) {
    using runtime::StopReason;
    const std::vector<TokenId>& prompt = decoded.positions;
    if (prompt.empty()) throw Error("generate: the prompt is empty");
    if (!is_text(prompt.back())) throw Error("generate: the prompt must end with a token, not an image");
    if (prompt.size() > ctx.n_ctx())
        throw Error("generate: the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                    std::to_string(ctx.n_ctx()));
    // The step drops draft tokens the target does not have: beyond its
    // tokenizer, or beyond its logit rows when it has none ("no_vocab").
    const auto n_vocab = static_cast<int32_t>(vocab.size() ? vocab.size() : ctx.model().hparams().n_vocab);
    step_ = SpeculativeStep(pointers(drafters_), params_.adaptive, n_vocab, params_.clock);

    // Drafters that read the target's hidden state have it captured.
    if (const auto layers = step_.feature_layers(); !layers.empty()) ctx.set_capture_layers(layers);
    const size_t n_feat_layers = ctx.params().capture_layers.size();
    const uint32_t n_embd = ctx.model().hparams().n_embd;

    // The prompt, as runtime::generate. Drafters that read the target's
    // features follow llama.cpp's protocol instead (speculative-simple): the
    // prompt but its last token is decoded, keeping the features of every
    // row (an image's rows too), and the first step verifies the last prompt
    // token with a draft.
    const bool features_protocol = n_feat_layers > 0;
    const size_t n_prefill = features_protocol ? prompt.size() - 1 : prompt.size();
    std::vector<float> prompt_features;
    const double t0 = clock_ms(params_.clock);
    ctx.memory_clear();
    const size_t n_batch = ctx.params().n_batch;
    runtime::Batch batch;
    if (n_prefill > 0) decoded.decode(ctx, n_prefill, features_protocol ? &prompt_features : nullptr);
    if (prompt_features.size() != (features_protocol ? n_prefill * n_feat_layers * n_embd : 0))
        throw Error("generate: the prompt's decode captured " + std::to_string(prompt_features.size()) +
                    " feature values for " + std::to_string(n_prefill) + " positions");
    for (TokenId t : prompt)
        if (is_text(t)) chain.accept_prompt(t);  // the text joins the penalties' history
    StepRequest request;
    request.n_max = params_.n_max;
    request.sampling = sampling_;
    if (sampling_.seed != sampling::kRandomSeed) {
        request.sampling.seed = request_seeds_.next_u32();
        if (request.sampling.seed == sampling::kRandomSeed) request.sampling.seed = 0;
    }
    std::vector<TokenId> history(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(n_prefill));
    step_.begin(0, history, request);
    step_.set_input_embeddings(decoded.embedding_at);
    step_.metrics().prompt_ms = clock_ms(params_.clock) - t0;

    runtime::GenerationResult result;
    // Takes one target token; false when generation ends with it.
    const auto emit = [&](TokenId token, std::span<const float>) {
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
    if (n_predict == 0) {
        step_.end();
        return result;
    }

    // history: the tokens in the target's cache.
    // The captured streams of the outputs of the last decode: rows 0..n-1.
    const uint32_t* layer_ids = ctx.params().capture_layers.data();
    const auto give_features = [&](size_t n_tokens, int32_t pos0) {
        if (n_feat_layers > 0)
            step_.set_target_features({ctx.features(0).data(), n_tokens, n_feat_layers, n_embd, pos0, layer_ids});
    };
    TokenId last;
    bool done = false;
    if (features_protocol) {
        if (n_prefill > 0)
            step_.set_target_features({prompt_features.data(), n_prefill, n_feat_layers, n_embd, 0, layer_ids});
        last = prompt.back();
    } else {
        last = chain.sample(ctx.logits(-1));
        chain.accept(last);
        done = !emit(last, {});
    }
    ContextMemory memory(ctx);
    const LogitRow rows = [&ctx](int i) { return ctx.logits(i); };
    while (!done) {
        const auto pos = static_cast<int32_t>(history.size());
        if (static_cast<uint32_t>(pos) >= ctx.n_ctx()) {
            result.stop = StopReason::ContextFull;
            break;
        }
        // The largest useful draft: the batch, the context, the request.
        int n_allowed = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(n_batch) - 1,
                                                           static_cast<int64_t>(ctx.n_ctx()) - pos - 1));
        if (n_predict >= 0) n_allowed = std::min(n_allowed, n_predict - static_cast<int>(result.tokens.size()) - 1);
        batch.clear();
        step_.prepare(history, last, n_allowed, memory, batch);
        const double tv = clock_ms(params_.clock);
        int rc = 1;
        try {
            rc = ctx.decode(batch);
        } catch (...) {
            step_.discard();
            throw;
        }
        if (rc != 0) {
            step_.discard();
            result.stop = StopReason::ContextFull;
            break;
        }
        const StepOutcome outcome = step_.finish(rows, chain, clock_ms(params_.clock) - tv, history, emit);
        give_features(static_cast<size_t>(outcome.n_accepted) + 1, pos);
        last = outcome.next;
        done = outcome.done;
    }
    step_.metrics().n_tokens_generated = static_cast<int64_t>(result.tokens.size());
    step_.end();
    return result;
}

}  // namespace cria::spec
