#pragma once
// The generation loop of llama-completion: decode the prompt (in batches of
// n_batch, logits for the last token only), then sample, accept, decode one
// token at a time until n_predict tokens, an end-of-generation token, or a
// full context -- or, with a context shift, past a full context
// (runtime/context_shift.h).

#include <functional>
#include <vector>

#include "cria/runtime/context.h"
#include "cria/sampling/chain.h"
#include "cria/vocab/vocab.h"

namespace cria::runtime {

enum class StopReason { Length, EndOfGeneration, ContextFull, Callback };

struct GenerationResult {
    std::vector<TokenId> tokens;  // generated tokens (an end-of-generation token is not included)
    StopReason stop = StopReason::Length;
};

// llama-completion's --context-shift: when the next token would fill the
// context (n_past + 1 >= n_ctx), the first n_keep positions stay, half of
// the rest is dropped and the remainder moves back. n_keep is the resolved
// count (completion_n_keep). Off: generation stops at a full context.
struct ContextShiftPolicy {
    bool enabled = false;
    int32_t n_keep = 0;
};

// on_token is called for every generated token before it is decoded; return
// false to stop. n_predict < 0: until EOG or a full context. Sequence 0 of
// ctx is used from position 0 (the cache is cleared first). A shift that
// ctx's memory cannot do throws cria::Error before anything is decoded.
GenerationResult generate(Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain,
                          const std::vector<TokenId>& prompt, int n_predict,
                          const std::function<bool(TokenId)>& on_token = {}, const ContextShiftPolicy& shift = {});

// The sampling loop alone, after the caller decoded a prompt into sequence 0
// up to position `pos` (exclusive) with logits for its last token (a prompt
// with images, media/eval_prompt.h). The prompt's text tokens should already
// be in the chain's history (accept_prompt).
GenerationResult continue_generation(Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain, int32_t pos,
                                     int n_predict, const std::function<bool(TokenId)>& on_token = {},
                                     const ContextShiftPolicy& shift = {});

}  // namespace cria::runtime
