#include "cria/runtime/generate.h"

#include <algorithm>

#include "cria/core/error.h"
#include "cria/runtime/context_shift.h"

namespace cria::runtime {

GenerationResult generate(Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain,
                          const std::vector<TokenId>& prompt, int n_predict,
                          const std::function<bool(TokenId)>& on_token, const ContextShiftPolicy& shift) {
    if (prompt.empty()) throw Error("generate: the prompt is empty");
    if (shift.enabled) require_context_shift(ctx, "generate");
    if (prompt.size() > ctx.n_ctx())
        throw Error("generate: the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                    std::to_string(ctx.n_ctx()));
    ctx.memory_clear();
    const size_t n_batch = ctx.params().n_batch;
    for (size_t first = 0; first < prompt.size(); first += n_batch) {
        const size_t count = std::min(n_batch, prompt.size() - first);
        Batch b;
        for (size_t i = 0; i < count; ++i)
            b.add(prompt[first + i], static_cast<int32_t>(first + i), {0}, first + i + 1 == prompt.size());
        if (ctx.decode(b) != 0) throw Error("generate: no room in the KV cache for the prompt");
    }
    // The prompt joins the sampler's history (penalties), as in llama.cpp.
    for (TokenId t : prompt) chain.accept_prompt(t);  // history for penalties; the grammar constrains only output
    return continue_generation(ctx, vocab, chain, static_cast<int32_t>(prompt.size()), n_predict, on_token, shift);
}

GenerationResult continue_generation(Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain, int32_t pos,
                                     int n_predict, const std::function<bool(TokenId)>& on_token,
                                     const ContextShiftPolicy& shift) {
    if (shift.enabled) require_context_shift(ctx, "generate");
    GenerationResult result;
    Batch one;
    while (n_predict < 0 || static_cast<int>(result.tokens.size()) < n_predict) {
        const TokenId token = chain.sample(ctx.logits(-1));
        chain.accept(token);
        if (vocab.is_eog(token)) {
            result.stop = StopReason::EndOfGeneration;
            break;
        }
        result.tokens.push_back(token);
        if (on_token && !on_token(token)) {
            result.stop = StopReason::Callback;
            break;
        }
        if (n_predict >= 0 && static_cast<int>(result.tokens.size()) >= n_predict) break;
        // llama-completion shifts when the token would fill the context
        // (n_past + 1 >= n_ctx), so the shifts fall where its do; n_predict
        // -2 means "until the context is full", which a shift would defeat.
        if (shift.enabled && n_predict != -2 && static_cast<uint32_t>(pos) + 1 >= ctx.n_ctx()) {
            const int32_t n_discard = discard_count(pos, shift.n_keep);
            if (n_discard > 0) pos = shift_context(ctx, 0, pos, shift.n_keep, n_discard);
        }
        if (static_cast<uint32_t>(pos) >= ctx.n_ctx()) {
            result.stop = StopReason::ContextFull;
            break;
        }
        one.clear();
        one.add(token, pos++, {0}, true);
        if (ctx.decode(one) != 0) {
            result.stop = StopReason::ContextFull;
            break;
        }
    }
    return result;
}

}  // namespace cria::runtime
