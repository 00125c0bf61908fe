#pragma once
// `cria run -m MODEL` without -p: a chat in the terminal with the same
// template rendering and output parsing as the server (history, /clear,
// /exit, Ctrl-C stops the reply being written).
#include <cstdint>
#include <iosfwd>
#include <string>

#include "cria/sampling/params.h"

namespace cria::server {

struct InteractiveChatOptions {
    std::string model_path;
    std::string chat_template;   // Jinja source; empty: the model's, else ChatML
    std::string system_prompt;
    int32_t n_ctx = 0;           // 0: the model's training context
    int n_threads = 0;
    int32_t max_tokens = -1;     // per reply
    sampling::SamplingParams sampling;
};

// Reads lines from `in` until /exit or end of input; returns the exit code.
int run_interactive_chat(const InteractiveChatOptions& options, std::istream& in, std::ostream& out);

// The hook for `cria run` without -p: its flags as they are, on the terminal (stdin/stdout).
int run_interactive_chat(const std::string& model_path, int32_t n_ctx, int n_threads, int32_t max_tokens, float temp,
                         int32_t top_k, float top_p, float min_p, uint32_t seed, float repeat_penalty);

}  // namespace cria::server
