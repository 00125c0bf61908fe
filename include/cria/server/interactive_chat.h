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

}  // namespace cria::server
