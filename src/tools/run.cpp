// cria run: generate text from a prompt, as llama.cpp's llama-completion.
//
//   cria run -m MODEL -p PROMPT | -f FILE [-n N] [-r STOP]... [-e | --no-escape] [--keep N]
//            [--context-shift | --no-context-shift]
//            [--temp T] [--top-k K] [--top-p P] [--min-p P] [-s SEED] [--repeat-penalty R]
//            [--repeat-last-n N] [--presence-penalty P] [--frequency-penalty P] [--dry-*]
//            [--typical P] [--top-n-sigma N] [--xtc-*] [--mirostat N] [--mirostat-lr E]
//            [--mirostat-ent T] [--dynatemp-range R] [--dynatemp-exp E] [-l ID(+/-)BIAS]...
//            [--ignore-eos] [--samplers LIST] [-c CTX] [-t THREADS]
//            [-b N] [-ub N] [-ctk T] [-ctv T] [--no-display-prompt] [--load-mode M]
//            [--grammar G | --grammar-file F | -j SCHEMA | --json-schema-file F]
//            [-md DRAFT] [--spec-type T[,T]] [--spec-draft-n-max N] ...
//   cria run -m MODEL --mmproj P --image IMG [--image IMG2 ...] -p "...<__media__>..."
//                                (images where the markers are; --media-marker M)
//   cria run -m MODEL --tokens 5,17,3 ...   (the prompt as token ids, e.g. for a
//                                 model without a tokenizer; such a model's
//                                 output is its token ids, one space before each)
//   cria run -m MODEL            (no -p: interactive chat in the terminal; the same
//                                 model, cache, sampling, grammar and speculative
//                                 decoding flags, and -sys, --chat-template[-file];
//                                 with --mmproj P, /image PATH attaches an image)
//
// The flags are llama-completion's (common/arg.cpp): same names, defaults
// and meaning. One that does not apply to the mode asked for is an error.
//
// stdout gets exactly the text: the prompt as its tokens read back (SPM's
// leading space included, BOS/control tokens not shown) unless
// --no-display-prompt, then every generated token as it comes. Logs and
// timings go to stderr.

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include <fstream>
#include <sstream>

#include "cria/core/error.h"
#include "cria/core/escapes.h"
#include "cria/gguf/file.h"
#include "cria/media/eval_prompt.h"
#include "cria/media/media_prompt.h"
#include "cria/media/prompt_positions.h"
#include "cria/model/model.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/context_shift.h"
#include "cria/runtime/generate.h"
#include "cria/runtime/options.h"
#include "cria/runtime/reverse_prompt.h"
#include "cria/sampling/grammar.h"
#include "cria/sampling/options.h"
#include "cria/sampling/params.h"
#include "cria/server/interactive_chat.h"
#include "cria/spec/options.h"
#include "cria/spec/speculative.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"
#include "tools/sampling_flags.h"
#include "tools/lora_flags.h"
#include "tools/spec_flags.h"
#include "tools/token_list.h"

namespace {

struct RunOptions {
    std::string model;
    cria::tools::LoraFlags lora;  // --lora, --lora-scaled (cria run -p)
    std::string prompt;
    std::string prompt_file;                  // -f: the prompt from a file
    std::string system_prompt;                // -sys: the chat's system message
    std::vector<std::string> reverse_prompts; // -r: halt once one is written
    std::string chat_template;                // the chat's template (Jinja source)
    std::string chat_template_file;
    bool jinja = false;                       // accepted: templates are always Jinja here
    bool escape = true;                       // -e (llama.cpp's default) / --no-escape
    int32_t keep = 0;                         // --keep: prompt tokens a context shift keeps (after the BOS)
    bool context_shift = false;               // --context-shift: go on past a full context (llama.cpp's default: off)
    std::string prompt_tokens;  // --tokens: the prompt as comma-separated token ids
    int n_predict = -1;
    cria::sampling::SamplingFlagState sampling;
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
    std::string mmproj;
    std::vector<std::string> images;
    std::string media_marker = std::string(cria::media::kDefaultMediaMarker);
    int64_t image_min_tokens = 0;
    int64_t image_max_tokens = 0;
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
    chat.sampling = opt.sampling.params;
    chat.system_prompt = opt.system_prompt;
    chat.chat_template = opt.chat_template;
    chat.grammar = opt.grammar;
    chat.backend.n_batch = static_cast<int32_t>(opt.n_batch);
    chat.backend.n_ubatch = static_cast<int32_t>(opt.n_ubatch);
    chat.backend.type_k = runtime::parse_cache_type(opt.cache_type_k);
    chat.backend.type_v = runtime::parse_cache_type(opt.cache_type_v);
    chat.backend.load_mode = mode;
    chat.backend.repack = !opt.no_repack;
    chat.speculative = opt.spec;
    chat.mmproj = opt.mmproj;  // for /image PATH
    return server::run_interactive_chat(chat, std::cin, std::cout);
}

// The prompt with images: each marker becomes the projector's delimiters
// around the image's embeddings (mtmd's layout), decoded, then sampled.
int run_with_images(const RunOptions& opt, cria::runtime::Context& ctx, const cria::vocab::Vocab& vocab,
                    cria::sampling::Chain& chain) {
    using namespace cria;
    if (opt.mmproj.empty()) throw Error("--image needs a vision projector (--mmproj FILE)");
    const auto mmproj = vision::Mmproj::open(opt.mmproj);
    const model::HParams& hp = ctx.model().hparams();
    if (mmproj->hparams().n_output != static_cast<int64_t>(hp.n_embd))
        throw Error("the projector outputs " + std::to_string(mmproj->hparams().n_output) +
                    " values per token but the text model's width is " + std::to_string(hp.n_embd));
    std::string prompt = opt.prompt;
    // Images without markers go first, as llama.cpp's mtmd-cli puts them.
    if (prompt.find(opt.media_marker) == std::string::npos)
        for (size_t i = 0; i < opt.images.size(); ++i) prompt = opt.media_marker + prompt;
    vision::PreprocessOptions po;
    po.min_tokens = opt.image_min_tokens;
    po.max_tokens = opt.image_max_tokens;
    std::vector<std::shared_ptr<const media::ImageChunk>> images;
    for (const auto& path : opt.images) {
        const auto t0 = std::chrono::steady_clock::now();
        images.push_back(media::encode_image_chunk(*mmproj, vision::load_image_file(path), ctx.ops(), po));
        std::fprintf(stderr, "cria run: %s -> %lld image tokens in %.1f ms\n", path.c_str(),
                     static_cast<long long>(images.back()->n_tokens),
                     std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const bool mrope = hp.rope_order == model::RopeOrder::MRope;
    const media::MediaPrompt mp = media::tokenize_media_prompt(
        vocab, prompt, images, media::image_delimiters(mmproj->hparams().projector), opt.media_marker, true, mrope);
    if (mp.n_positions() > static_cast<int32_t>(ctx.n_ctx()))
        throw Error("the prompt takes " + std::to_string(mp.n_positions()) + " positions, more than the context of " +
                    std::to_string(ctx.n_ctx()));
    if (!opt.no_display_prompt) {
        std::string shown;
        for (const auto& c : mp.chunks) {
            if (c.is_image()) shown += opt.media_marker;
            for (auto t : c.tokens) shown += vocab.token_to_piece(t, false);
        }
        std::fwrite(shown.data(), 1, shown.size(), stdout);
        std::fflush(stdout);
    }
    const auto print = [&](runtime::TokenId t) {
        const std::string piece = vocab.token_to_piece(t, false);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
    };
    runtime::GenerationResult result;
    std::string spec_report;
    if (opt.spec.enabled()) {
        // The speculator decodes the prompt itself (position by position, image
        // positions as placeholders the drafters skip or read the image rows of).
        if (mrope)
            throw Error("speculative decoding with images needs a text model without M-RoPE (an M-RoPE image "
                        "takes fewer positions than tokens)");
        spec::DecodedPrompt decoded;
        decoded.positions = media::prompt_positions(mp);
        decoded.decode = [&mp](runtime::Context& c, size_t n, std::vector<float>* features) {
            media::eval_media_prompt_prefix(c, mp, 0, n, features);
        };
        decoded.embedding_at = [&mp](int32_t pos) { return media::image_embedding_at(mp, pos); };
        spec::Speculator speculator(opt.spec, spec::make_drafters(opt.spec, ctx, vocab));
        speculator.set_sampling(opt.sampling.params);  // the draft chain and the verifier follow --temp and --seed
        result = speculator.generate(ctx, vocab, chain, decoded, opt.n_predict, print);
        spec_report = speculator.metrics().format();
    } else {
        ctx.memory_clear();
        const int32_t n_past = media::eval_media_prompt(ctx, mp, 0, 0, true);
        for (const auto& c : mp.chunks)
            for (auto t : c.tokens) chain.accept_prompt(t);  // the text joins the penalties' history
        result = runtime::continue_generation(ctx, vocab, chain, n_past, opt.n_predict, print);
    }
    if (result.stop == runtime::StopReason::EndOfGeneration) std::fputs(" [end of text]\n", stdout);
    std::fputs("\n\n", stdout);
    std::fflush(stdout);
    if (result.stop == runtime::StopReason::ContextFull) std::fprintf(stderr, "cria run: context full, stopping\n");
    if (!spec_report.empty()) {
        std::fputs(spec_report.c_str(), stderr);
    } else {
        const auto& t = ctx.timings();
        print_timing("prompt eval time", t.prompt_ms, t.prompt_tokens);
        print_timing("eval time", t.eval_ms, t.eval_tokens);
    }
    return 0;
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

    auto model = runtime::load_model(opt.model, mode, !opt.no_repack);
    for (const auto& w : model->file().warnings()) std::fprintf(stderr, "cria run: warning: %s\n", w.c_str());
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    for (const auto& w : vocab.warnings()) std::fprintf(stderr, "cria run: warning: %s\n", w.c_str());
    runtime::Context ctx(*model, cp);
    std::vector<std::unique_ptr<model::LoraAdapter>> adapters;
    ctx.set_lora(tools::load_lora_flags(opt.lora, *model, adapters));
    for (const auto& a : adapters) std::fprintf(stderr, "cria run: LoRA adapter %s\n", a->path().c_str());
    std::fprintf(stderr, "cria run: %s, %u layers, n_ctx = %u, %d threads, KV cache %s/%s (%.1f MiB), loaded with %s\n",
                 model->description().c_str(), model->hparams().n_layer, ctx.n_ctx(), ctx.n_threads(),
                 opt.cache_type_k.c_str(), opt.cache_type_v.c_str(), ctx.memory_bytes() / 1048576.0,
                 std::string(gguf::load_mode_name(model->file().load_mode())).c_str());

    const sampling::SamplingParams& sp = opt.sampling.params;
    for (const auto& lb : sp.logit_bias)
        if (lb.token < 0 || lb.token >= static_cast<int32_t>(vocab.size()))
            throw Error("--logit-bias: token " + std::to_string(lb.token) + " is not in the vocabulary (" +
                        std::to_string(vocab.size()) + " tokens)");
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    cc.n_ctx = static_cast<int32_t>(ctx.n_ctx());
    cc.n_ctx_train = static_cast<int32_t>(model->hparams().n_ctx_train);
    auto chain = sampling::build_chain(sp, cc);
    if (auto grammar = sampling::make_grammar_sampler(vocab, opt.grammar)) chain.set_grammar(std::move(grammar));
    std::fprintf(stderr, "cria run: sampler chain: %s\n", chain.describe().c_str());

    if (!opt.mmproj.empty() || !opt.images.empty()) {
        // llama.cpp's mtmd tools never shift either: an image's tokens cannot be cut in half.
        if (opt.context_shift) throw Error("--context-shift does not work with images (--image/--mmproj)");
        return run_with_images(opt, ctx, vocab, chain);
    }

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
    // llama-completion's n_keep: the BOS is always kept (its add_bos is off with --jinja).
    runtime::ContextShiftPolicy shift;
    shift.enabled = opt.context_shift;
    shift.n_keep = runtime::completion_n_keep(opt.keep, tokens.size(), vocab.add_bos() && !opt.jinja);
    if (opt.context_shift) {
        runtime::require_context_shift(ctx, "--context-shift");
        std::fprintf(stderr, "cria run: context shift on, n_keep = %d\n", shift.n_keep);
    } else if (opt.keep != 0) {
        std::fprintf(stderr, "cria run: n_keep = %d: it has no effect without --context-shift, as in llama-completion "
                             "(generation stops at a full context)\n", opt.keep);
    }
    const runtime::ReversePrompts reverse(vocab, opt.reverse_prompts);
    std::vector<runtime::TokenId> history = tokens;  // what the reverse prompts are looked for in
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
        history.push_back(t);
        return reverse.found(history).empty();  // llama-completion halts after writing the reverse prompt
    };
    runtime::GenerationResult result;
    std::string spec_report;
    if (!reverse.found(history).empty()) {
        // The prompt itself ends with a reverse prompt: llama-completion stops before sampling.
        result.stop = runtime::StopReason::Callback;
    } else if (opt.spec.enabled()) {
        spec::Speculator speculator(opt.spec, spec::make_drafters(opt.spec, ctx, vocab));
        speculator.set_sampling(sp);  // the draft chain and the verifier follow --temp and --seed
        result = speculator.generate(ctx, vocab, chain, tokens, opt.n_predict, print);
        spec_report = speculator.metrics().format();
    } else {
        result = runtime::generate(ctx, vocab, chain, tokens, opt.n_predict, print, shift);
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
    auto* file = cmd.add_option("-f,--file", opt->prompt_file, "A file containing the prompt (one trailing newline is dropped)");
    cmd.add_option("-r,--reverse-prompt", opt->reverse_prompts,
                   "Halt generation at PROMPT (repeatable; with -p or -f)");
    cmd.add_flag("-e,--escape,!--no-escape", opt->escape,
                 "Process escape sequences (\\n, \\r, \\t, \\', \\\", \\\\, \\xHH) in the prompt, the reverse "
                 "prompts and the DRY sequence breakers (default: on; --no-escape: off)");
    cmd.add_option("--keep", opt->keep,
                   "Number of tokens to keep from the initial prompt on a context shift (default: 0, -1 = all; the "
                   "BOS is always kept); only with --context-shift");
    cmd.add_flag("--context-shift,!--no-context-shift", opt->context_shift,
                  "Whether to use context shift on infinite text generation (default: disabled): when the context "
                  "is full, keep the first --keep prompt tokens, drop half of the rest and go on");
    cmd.add_option("--system-prompt", opt->system_prompt, "System message of the chat (without -p); also -sys PROMPT");
    cmd.add_option("--chat-template", opt->chat_template, "Jinja chat template source for the chat (overrides the model's)");
    cmd.add_option("--chat-template-file", opt->chat_template_file, "File holding the chat's Jinja template");
    cmd.add_flag("--jinja", opt->jinja,
                 "Accepted for llama.cpp's command lines: cria always renders chat templates with its Jinja engine");
    cria::tools::add_sampling_flags(cmd, opt, &RunOptions::sampling);
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
    cmd.add_option("--mmproj", opt->mmproj, "Vision projector GGUF (llama.cpp's mmproj) for --image, and for /image PATH in the chat");
    cmd.add_option("--image", opt->images, "Image file for the prompt's next media marker (repeatable)");
    cmd.add_option("--media-marker", opt->media_marker, "The text in the prompt that an image replaces");
    cmd.add_option("--image-min-tokens", opt->image_min_tokens, "Dynamic-size projectors: fewest image tokens (0: default)");
    cmd.add_option("--image-max-tokens", opt->image_max_tokens, "Dynamic-size projectors: most image tokens (0: default)");
    cria::tools::add_lora_flags(cmd, &opt->lora);
    return [opt, prompt, file, prompt_tokens, &cmd]() -> int {
        using namespace cria;
        std::string n_ctx, n_ubatch, draft_model, seed, system_prompt;
        runtime::take_dash_options(cmd.remaining(), {{"-m", &opt->model},
                                                     {"-s", &seed},
                                                     {"-sys", &system_prompt},
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
        if (!seed.empty()) sampling::apply_option(opt->sampling, "-s", seed);
        if (!system_prompt.empty()) opt->system_prompt = system_prompt;
        if (opt->keep < -1) throw Error("--keep must be -1 (all) or a count, got " + std::to_string(opt->keep));
        if (opt->context_shift && opt->spec.enabled())
            throw Error("--context-shift does not work with speculative decoding yet (a verify batch would have to "
                        "be shifted with the draft's cache)");
        if (prompt->count() > 0 && file->count() > 0) throw Error("give the prompt with -p or -f, not both");
        if (file->count() > 0) {
            std::ifstream in(opt->prompt_file, std::ios::binary);
            if (!in) throw Error("-f: cannot open '" + opt->prompt_file + "'");
            std::ostringstream ss;
            ss << in.rdbuf();
            opt->prompt = ss.str();
            if (!opt->prompt.empty() && opt->prompt.back() == '\n') opt->prompt.pop_back();  // as llama.cpp's -f
        }
        if (!opt->chat_template_file.empty()) {
            if (!opt->chat_template.empty()) throw Error("give --chat-template or --chat-template-file, not both");
            std::ifstream in(opt->chat_template_file, std::ios::binary);
            if (!in) throw Error("--chat-template-file: cannot open '" + opt->chat_template_file + "'");
            std::ostringstream ss;
            ss << in.rdbuf();
            opt->chat_template = ss.str();
        }
        if (opt->escape) {
            opt->prompt = process_escapes(opt->prompt);
            for (auto& r : opt->reverse_prompts) r = process_escapes(r);
            for (auto& b : opt->sampling.params.dry_sequence_breakers) b = process_escapes(b);
        }
        const bool completion = prompt->count() > 0 || file->count() > 0 || prompt_tokens->count() > 0;
        if (completion) {
            // A raw completion (llama-completion -no-cnv): chat-only flags would do nothing.
            if (!opt->system_prompt.empty()) throw Error("-sys/--system-prompt is for the chat (run without -p or -f)");
            if (!opt->chat_template.empty())
                throw Error("--chat-template/--chat-template-file are for the chat (run without -p or -f)");
        } else if (!opt->reverse_prompts.empty()) {
            throw Error("-r/--reverse-prompt needs -p or -f (the chat ends replies at the template's end of turn)");
        }
        if (!completion && !opt->images.empty()) throw Error("--image needs a prompt (-p or -f)");
        if (!completion) {
            // No prompt: chat in the terminal with the model's template, on
            // the server's scheduler (one slot, its speculative step).
            if (opt->context_shift)
                throw Error("--context-shift is for a completion (-p, -f or --tokens); the terminal chat stops at a "
                            "full context");
            if (!opt->lora.files.empty() || !opt->lora.scaled_files.empty())
                throw Error("--lora / --lora-scaled are not supported in the terminal chat yet (use -p)");
            return run_chat(*opt, mode);
        }
        return run_completion(*opt, mode);
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(run, "run", "Generate text from a prompt (like llama-completion)", setup);
