// cria run: generate text from a prompt, as llama.cpp's llama-completion.
//
//   cria run -m MODEL -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]
//            [--min-p P] [--seed S] [--repeat-penalty R] [-c CTX] [-t THREADS]
//            [-b N] [-ub N] [-ctk T] [-ctv T] [--no-display-prompt] [--load-mode M]
//            [--grammar G | --grammar-file F | -j SCHEMA | --json-schema-file F]
//            [-md DRAFT] [--spec-type T[,T]] [--spec-draft-n-max N] ...
//   cria run -m MODEL --tokens 5,17,3 ...   (the prompt as token ids, e.g. for a
//                                 model without a tokenizer; such a model's
//                                 output is its token ids, one space before each)
//   cria run -m MODEL            (no -p: interactive chat in the terminal; the same
//                                 model, cache, sampling, grammar and speculative
//                                 decoding flags)
//
// stdout gets exactly the text: the prompt as its tokens read back (SPM's
// leading space included, BOS/control tokens not shown) unless
// --no-display-prompt, then every generated token as it comes. Logs and
// timings go to stderr.

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/runtime/generate.h"
#include "cria/runtime/options.h"
#include "cria/sampling/grammar.h"
#include "cria/sampling/params.h"
#include "cria/server/interactive_chat.h"
#include "cria/spec/options.h"
#include "cria/spec/speculative.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"
#include "tools/spec_flags.h"
#include "tools/token_list.h"

namespace {

struct RunOptions {
    std::string model;
    std::string prompt;
    std::string prompt_tokens;  // --tokens: the prompt as comma-separated token ids
    int n_predict = -1;
    float temp = 0.8f;
    int top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    uint32_t seed = cria::sampling::kRandomSeed;
    float repeat_penalty = 1.0f;
    uint32_t n_ctx = 4096;
    int threads = 0;
    uint32_t n_batch = 2048;
    uint32_t n_ubatch = 512;
    std::string cache_type_k = "f16";
    std::string cache_type_v = "f16";
    bool no_display_prompt = false;
    std::string load_mode = "auto";
    bool no_repack = false;
    cria::sampling::GrammarOptions grammar;
    cria::spec::SpecParams spec;
};

void print_timing(const char* what, double ms, int64_t tokens) {
    std::fprintf(stderr, "cria run: %17s = %10.2f ms / %5lld tokens (%8.2f ms per token, %8.2f tokens per second)\n", what,
                 ms, static_cast<long long>(tokens), tokens ? ms / static_cast<double>(tokens) : 0.0,
                 ms > 0 ? 1e3 * static_cast<double>(tokens) / ms : 0.0);
}

// No prompt: the chat in the terminal, with the same flags.
int run_chat(const RunOptions& opt, cria::gguf::LoadMode mode) {
    using namespace cria;
    server::InteractiveChatOptions chat;
    chat.model_path = opt.model;
    chat.n_ctx = static_cast<int32_t>(opt.n_ctx);
    chat.n_threads = opt.threads;
    chat.max_tokens = opt.n_predict;
    chat.sampling.temp = opt.temp;
    chat.sampling.top_k = opt.top_k;
    chat.sampling.top_p = opt.top_p;
    chat.sampling.min_p = opt.min_p;
    chat.sampling.seed = opt.seed;
    chat.sampling.penalty_repeat = opt.repeat_penalty;
    chat.grammar = opt.grammar;
    chat.backend.n_batch = static_cast<int32_t>(opt.n_batch);
    chat.backend.n_ubatch = static_cast<int32_t>(opt.n_ubatch);
    chat.backend.type_k = runtime::parse_cache_type(opt.cache_type_k);
    chat.backend.type_v = runtime::parse_cache_type(opt.cache_type_v);
    chat.backend.load_mode = mode;
    chat.backend.repack = !opt.no_repack;
    chat.speculative = opt.spec;
    return server::run_interactive_chat(chat, std::cin, std::cout);
}

// cria run -p: the prompt's continuation, as llama-completion prints it.
int run_completion(const RunOptions& opt, cria::gguf::LoadMode mode) {
    using namespace cria;
    runtime::ContextParams cp;
    cp.n_ctx = opt.n_ctx;
    cp.n_batch = opt.n_batch;
    cp.n_ubatch = opt.n_ubatch;
    cp.n_threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency());
    cp.type_k = runtime::parse_cache_type(opt.cache_type_k);
    cp.type_v = runtime::parse_cache_type(opt.cache_type_v);

    auto model = model::Model::load(opt.model, mode, !opt.no_repack);
    for (const auto& w : model->file().warnings()) std::fprintf(stderr, "cria run: warning: %s\n", w.c_str());
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    for (const auto& w : vocab.warnings()) std::fprintf(stderr, "cria run: warning: %s\n", w.c_str());
    runtime::Context ctx(*model, cp);
    std::fprintf(stderr, "cria run: %s, %u layers, n_ctx = %u, %d threads, KV cache %s/%s (%.1f MiB), loaded with %s\n",
                 model->description().c_str(), model->hparams().n_layer, ctx.n_ctx(), ctx.n_threads(),
                 opt.cache_type_k.c_str(), opt.cache_type_v.c_str(), ctx.memory_bytes() / 1048576.0,
                 std::string(gguf::load_mode_name(model->file().load_mode())).c_str());

    sampling::SamplingParams sp;
    sp.temp = opt.temp;
    sp.top_k = opt.top_k;
    sp.top_p = opt.top_p;
    sp.min_p = opt.min_p;
    sp.seed = opt.seed;
    sp.penalty_repeat = opt.repeat_penalty;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    cc.n_ctx = static_cast<int32_t>(ctx.n_ctx());
    cc.n_ctx_train = static_cast<int32_t>(model->hparams().n_ctx_train);
    auto chain = sampling::build_chain(sp, cc);
    if (auto grammar = sampling::make_grammar_sampler(vocab, opt.grammar)) chain.set_grammar(std::move(grammar));
    std::fprintf(stderr, "cria run: sampler chain: %s\n", chain.describe().c_str());

    const uint32_t n_vocab = model->hparams().n_vocab;
    const auto tokens = opt.prompt_tokens.empty() ? vocab.tokenize(opt.prompt, true, true)
                                                  : tools::parse_token_list(opt.prompt_tokens);
    if (tokens.empty()) throw Error("the prompt gives no tokens");
    for (auto t : tokens)
        if (static_cast<uint32_t>(t) >= n_vocab)
            throw Error("--tokens: token id " + std::to_string(t) + " is outside the model's vocabulary of " +
                        std::to_string(n_vocab));
    // A model without a tokenizer has no text to show: its tokens are shown as ids.
    const bool show_ids = vocab.type() == vocab::VocabType::None;
    const auto shown = [&](runtime::TokenId t) {
        return show_ids ? " " + std::to_string(t) : vocab.token_to_piece(t, false);
    };
    if (!opt.no_display_prompt) {
        std::string text;
        for (auto t : tokens) text += shown(t);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    }
    const auto print = [&](runtime::TokenId t) {
        const std::string piece = shown(t);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
    };
    runtime::GenerationResult result;
    std::string spec_report;
    if (opt.spec.enabled()) {
        spec::Speculator speculator(opt.spec, spec::make_drafters(opt.spec, ctx, vocab));
        speculator.set_sampling(sp);  // the draft chain and the verifier follow --temp and --seed
        result = speculator.generate(ctx, vocab, chain, tokens, opt.n_predict, print);
        spec_report = speculator.metrics().format();
    } else {
        result = runtime::generate(ctx, vocab, chain, tokens, opt.n_predict, print);
    }
    // llama-completion's closing lines, on stdout like the text.
    if (result.stop == runtime::StopReason::EndOfGeneration) std::fputs(" [end of text]\n", stdout);
    std::fputs("\n\n", stdout);
    std::fflush(stdout);
    if (result.stop == runtime::StopReason::ContextFull) std::fprintf(stderr, "cria run: context full, stopping\n");
    if (!spec_report.empty()) {
        // Verify batches are multi-token decodes: the speculative metrics tell the real story.
        std::fputs(spec_report.c_str(), stderr);
    } else {
        const auto& t = ctx.timings();
        print_timing("prompt eval time", t.prompt_ms, t.prompt_tokens);
        print_timing("eval time", t.eval_ms, t.eval_tokens);
    }
    return 0;
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<RunOptions>();
    // -m is read with the other one-dash flags: CLI11 would take "-md FILE" as "-m d".
    cmd.add_option("--model", opt->model, "GGUF model file; also -m FILE");
    auto* prompt = cmd.add_option("-p,--prompt", opt->prompt, "Prompt to continue (without -p: a chat in the terminal, with the same flags)");
    auto* prompt_tokens = cmd.add_option("--tokens", opt->prompt_tokens,
                                         "Prompt as comma-separated token ids instead of -p (e.g. 5,17,3)")
                              ->excludes(prompt);
    cmd.add_option("-n,--n-predict", opt->n_predict, "Tokens to generate (-1: until end of generation or a full context)");
    cmd.add_option("--temp", opt->temp, "Temperature (0: greedy)");
    cmd.add_option("--top-k", opt->top_k, "Top-k (0: off)");
    cmd.add_option("--top-p", opt->top_p, "Top-p (1.0: off)");
    cmd.add_option("--min-p", opt->min_p, "Min-p (0.0: off)");
    cmd.add_option("-s,--seed", opt->seed, "Sampling seed (default: random)");
    cmd.add_option("--repeat-penalty", opt->repeat_penalty, "Penalty for repeated tokens (1.0: off)");
    cmd.add_option("--ctx-size", opt->n_ctx, "Context size in tokens (0: the model's); also -c N");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_option("-b,--batch-size", opt->n_batch, "Most tokens per decode call");
    cmd.add_option("--ubatch-size", opt->n_ubatch, "Tokens per forward pass; also -ub N");
    cmd.add_option("--cache-type-k", opt->cache_type_k, "KV cache type of K: f16, f32, bf16, q8_0, q4_0; also -ctk T");
    cmd.add_option("--cache-type-v", opt->cache_type_v, "KV cache type of V: f16, f32, bf16, q8_0, q4_0; also -ctv T");
    cmd.allow_extras();  // -c, -ub, -ctk, -ctv: see runtime::take_dash_options
    cmd.add_flag("--no-display-prompt", opt->no_display_prompt, "Do not print the prompt");
    cmd.add_option("--load-mode", opt->load_mode, "auto, none, mmap, mlock, mmap+mlock or dio");
    cmd.add_flag("--no-repack", opt->no_repack,
                 "Multiply the weights as the file stores them (no packed copies for the SIMD kernels)");
    cmd.add_option("--grammar", opt->grammar.grammar, "GBNF grammar the output must follow");
    cmd.add_option("--grammar-file", opt->grammar.grammar_file, "File with a GBNF grammar");
    cmd.add_option("-j,--json-schema", opt->grammar.json_schema, "JSON Schema the output must follow");
    cmd.add_option("--json-schema-file", opt->grammar.json_schema_file, "File with a JSON Schema");
    cria::tools::add_spec_flags(cmd, opt, &RunOptions::spec);
    return [opt, prompt, prompt_tokens, &cmd]() -> int {
        using namespace cria;
        std::string n_ctx, n_ubatch, draft_model;
        runtime::take_dash_options(cmd.remaining(), {{"-m", &opt->model},
                                                     {"-md", &draft_model},
                                                     {"-c", &n_ctx},
                                                     {"-ub", &n_ubatch},
                                                     {"-ctk", &opt->cache_type_k},
                                                     {"-ctv", &opt->cache_type_v}});
        if (opt->model.empty()) throw Error("no model given (-m FILE)");
        if (!draft_model.empty()) spec::apply_option(opt->spec, "-md", draft_model);
        if (!n_ctx.empty()) opt->n_ctx = runtime::parse_count(n_ctx, "-c");
        if (!n_ubatch.empty()) opt->n_ubatch = runtime::parse_count(n_ubatch, "-ub");
        const gguf::LoadMode mode = runtime::parse_load_mode_or_throw(opt->load_mode);
        if (prompt->count() == 0 && prompt_tokens->count() == 0) {
            // No prompt: chat in the terminal with the model's template, on
            // the server's scheduler (one slot, its speculative step).
            return run_chat(*opt, mode);
        }
        return run_completion(*opt, mode);
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(run, "run", "Generate text from a prompt (like llama-completion)", setup);
