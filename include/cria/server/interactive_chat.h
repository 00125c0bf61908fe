#pragma once
// `cria run -m MODEL` without -p: a chat in the terminal with the same
// template rendering and output parsing as the server (history, /clear,
// /exit, Ctrl-C stops the reply being written). With a vision projector
// (--mmproj), `/image PATH` attaches an image to the next message, as
// llama.cpp's mtmd-cli does; it stays in the history like the text.
#include <cstdint>
#include <iosfwd>
#include <string>

#include "cria/sampling/grammar.h"
#include "cria/sampling/params.h"
#include "cria/server/runtime_backend.h"
#include "cria/spec/params.h"

namespace cria::server {

struct InteractiveChatOptions {
    std::string model_path;
    std::string chat_template;   // Jinja source; empty: the model's, else ChatML
    std::string system_prompt;
    int32_t n_ctx = 0;           // 0: the model's training context
    int n_threads = 0;
    int32_t max_tokens = -1;     // per reply
    sampling::SamplingParams sampling;
    // Constrains every reply (--grammar, --grammar-file, -j, --json-schema-file).
    sampling::GrammarOptions grammar;
    // The model and cache settings of `cria run` (-b, -ub, -ctk, -ctv,
    // --load-mode, --no-repack); n_seq, n_ctx and n_threads come from above.
    RuntimeBackendParams backend;
    // Speculative decoding of every reply (-md, --spec-type, --spec-*), as
    // `cria serve` runs it in each slot: at temperature 0 the replies are
    // the ones plain decoding gives. Off when nothing drafts.
    spec::SpecParams speculative;
    // The vision projector for /image (empty: /image says it needs one).
    std::string mmproj;
};

// Reads lines from `in` until /exit or end of input; returns the exit code.
// Throws cria::Error before the first prompt when the model cannot be loaded
// or the grammar is invalid.
int run_interactive_chat(const InteractiveChatOptions& options, std::istream& in, std::ostream& out);

}  // namespace cria::server
