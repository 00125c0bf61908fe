#pragma once
// llama-server's native completion API (POST /completion, /completions):
// the request (prompt as text, token ids, a mixed list, or a list of such
// prompts; n_predict; llama.cpp's sampling fields) and its reply objects
// ({content, tokens, stop, stop_type, ...}, and the partial objects of an
// SSE stream). The generation itself goes through the one scheduler path.
#include <string>
#include <vector>

#include "api.h"
#include "responses.h"

namespace cria::server {

struct NativeCompletionJob {
    std::string model;  // as the client named it ("" when absent)
    // One request per prompt (llama-server answers a list of prompts with a
    // list of results); all share the sampling settings of `gen`.
    std::vector<std::vector<TokenId>> prompts;
    GenerationRequest gen;  // settings; gen.prompt is left empty
    bool stream = false;
    bool return_tokens = false;  // "tokens": the generated ids (else [])
    int32_t n_probs = 0;         // > 0: "completion_probabilities" with that many alternatives
};

// Most prompts one request may list.
inline constexpr size_t kMaxNativePrompts = 16;

NativeCompletionJob parse_native_completion(const json& body, const vocab::Vocab& vocab, int32_t n_vocab,
                                            const sampling::SamplingParams& defaults = {});

// What llama-server calls stop_type: "eos", "word", "limit" or "none".
std::string native_stop_type(const std::string& finish_reason, const std::string& stop_word);

// The settings echoed as "generation_settings" (those cria honours).
json native_generation_settings(const GenerationRequest& gen, bool stream, int32_t n_probs);

// llama-server's "completion_probabilities" for tokens (n_probs > 0).
json native_probabilities(const std::vector<TokenLogprob>& lps);

// What one finished prompt reports.
struct NativeFinal {
    size_t index = 0;
    std::string content;
    std::vector<TokenId> tokens;
    std::string model;
    std::string prompt;  // the prompt as text
    std::string finish_reason, stop_word;
    int32_t slot = -1;
    bool truncated = false;     // a context shift dropped part of the context
    int32_t tokens_cached = 0;  // the slot's cached tokens at the end
    Usage usage;
};
// The reply (non-streaming) or the last SSE object (stream: content is ""
// there, since the partial objects carried it).
json native_final_json(const NativeFinal& f, const json& generation_settings);
// One SSE object of a stream before the last. `n_prompt`: the prompt's
// length (llama-server's tokens_evaluated); the slot and the running count of
// generated tokens are only known to the final object, so they are left out.
json native_partial_json(size_t index, const std::string& content, const std::vector<TokenId>& tokens,
                         size_t n_prompt);

}  // namespace cria::server
