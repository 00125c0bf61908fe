#pragma once
// Perplexity of a model on a text, by llama.cpp's method (llama-perplexity):
// the text is tokenized whole (with BOS when the vocab adds one) and cut into
// chunks of n_ctx tokens; each chunk is decoded from an empty cache, its first
// token replaced by BOS when the vocab adds BOS, and only the second half of
// the chunk is scored (every scored token has at least n_ctx/2 tokens of
// context). Several chunks share one batch as separate sequences when n_batch
// holds them (n_seq = n_batch / n_ctx), as llama.cpp does.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/vocab/vocab.h"

namespace cria::runtime {

struct PerplexityParams {
    uint32_t n_ctx = 512;
    uint32_t n_batch = 2048;
    int n_chunks = -1;  // at most this many chunks (-1: all)
    int n_threads = 0;
    ElementType type_k = ElementType::F16;
    ElementType type_v = ElementType::F16;
    // --kl-divergence-base: the tokens once (before any decode), then every
    // scored row's logits and the token that follows, chunk by chunk in
    // position order (one chunk per batch then, so that rows come in order).
    std::function<void(int32_t n_ctx, int32_t n_chunk, const std::vector<int32_t>& tokens)> on_tokens;
    std::function<void(std::span<const float> logits, int32_t next)> on_row;
    const model::LoraSet* lora = nullptr;  // LoRA adapters applied (null: none); must outlive the call
};

struct PerplexityResult {
    double ppl = 0;
    double uncertainty = 0;  // the "+/-" of llama.cpp's final estimate
    int n_chunks = 0;
    int64_t n_scored = 0;
    std::vector<double> running;  // the estimate after each chunk ([1], [2], ...)
    int n_seq = 1;
    size_t n_tokens = 0;
};

// Throws cria::Error when the text has fewer than 2 * n_ctx tokens.
// on_chunk(i, estimate) is called after every chunk.
PerplexityResult perplexity(const model::Model& model, const vocab::Vocab& vocab, const std::string& text,
                            const PerplexityParams& params,
                            const std::function<void(int, double)>& on_chunk = {});

}  // namespace cria::runtime
