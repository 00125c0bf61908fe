// cria logits: the logits a model gives a token sequence, as one JSON object,
// for comparing with another engine (llama.cpp's architecture fixtures).
//
//   cria logits -m MODEL --tokens 5,17,3,... [--prefill N] [-t T] [-c N] [-ctk T] [-ctv T]
//               [--lora FILE] [--lora-scaled FILE SCALE] (LoRA adapters, repeatable)
//
// stdout: {"n_vocab": V, "tokens": [...], "logits": [[V floats] per token]}.
// The first N tokens (default: all) are decoded in one call with logits for
// every position, then each remaining token alone at the next position of
// sequence 0. Needs no tokenizer. The cache is F32 by default (the fixtures'
// reference ran so); -ctk/-ctv f16 gives llama.cpp's default instead.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/logits.h"
#include "cria/runtime/options.h"
#include "tools/command.h"
#include "tools/lora_flags.h"
#include "tools/token_list.h"

namespace {

struct LogitsOptions {
    std::string model;
    std::string tokens;
    size_t prefill = 0;
    int threads = 0;
    std::string cache_type_k = "f32";
    std::string cache_type_v = "f32";
    std::string load_mode = "auto";
    bool no_repack = false;
    cria::tools::LoraFlags lora;
};

void print_json(const std::vector<cria::runtime::TokenId>& tokens, const std::vector<std::vector<float>>& rows,
                uint32_t n_vocab) {
    std::string out = "{\"n_vocab\": " + std::to_string(n_vocab) + ", \"tokens\": [";
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? ", " : "") + std::to_string(tokens[i]);
    out += "], \"logits\": [";
    char buf[32];
    for (size_t r = 0; r < rows.size(); ++r) {
        out += r ? ",\n[" : "\n[";
        for (size_t j = 0; j < rows[r].size(); ++j) {
            // %.9g round-trips a float exactly.
            const int len = std::snprintf(buf, sizeof buf, "%s%.9g", j ? ", " : "", static_cast<double>(rows[r][j]));
            out.append(buf, static_cast<size_t>(len));
        }
        out += ']';
    }
    out += "]}\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<LogitsOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF model file (a tokenizer is not needed)")->required();
    cmd.add_option("--tokens", opt->tokens, "Comma-separated token ids, e.g. 5,17,3")->required();
    cmd.add_option("--prefill", opt->prefill,
                   "Tokens decoded in the first call (default: all); the rest one at a time");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_option("--cache-type-k", opt->cache_type_k, "KV cache type of K (default f32); also -ctk T");
    cmd.add_option("--cache-type-v", opt->cache_type_v, "KV cache type of V (default f32); also -ctv T");
    cmd.add_option("--load-mode", opt->load_mode, "auto, none, mmap, mlock, mmap+mlock or dio");
    cmd.add_flag("--no-repack", opt->no_repack,
                 "Multiply the weights as the file stores them (no packed copies for the SIMD kernels)");
    cria::tools::add_lora_flags(cmd, &opt->lora);
    cmd.allow_extras();  // -c, -ctk, -ctv: see runtime::take_dash_options
    return [opt, &cmd]() -> int {
        using namespace cria;
        std::string n_ctx;
        runtime::take_dash_options(cmd.remaining(),
                                   {{"-c", &n_ctx}, {"-ctk", &opt->cache_type_k}, {"-ctv", &opt->cache_type_v}});
        runtime::LogitsParams lp;
        if (!n_ctx.empty()) lp.n_ctx = runtime::parse_count(n_ctx, "-c");
        lp.prefill = opt->prefill;
        lp.n_threads = opt->threads;
        lp.type_k = runtime::parse_cache_type(opt->cache_type_k);
        lp.type_v = runtime::parse_cache_type(opt->cache_type_v);
        const auto tokens = tools::parse_token_list(opt->tokens);
        auto model = runtime::load_model(opt->model, runtime::parse_load_mode_or_throw(opt->load_mode), !opt->no_repack);
        std::vector<std::unique_ptr<model::LoraAdapter>> adapters;
        const model::LoraSet lora = tools::load_lora_flags(opt->lora, *model, adapters);
        lp.lora = &lora;
        const auto rows = runtime::sequence_logits(*model, tokens, lp);
        print_json(tokens, rows, model->hparams().n_vocab);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(logits, "logits", "Print the logits of a token sequence as JSON (checks against llama.cpp)", setup);
