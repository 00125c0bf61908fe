// cria serve: the OpenAI- and Anthropic-compatible HTTP server (llama-server's flags).
//
//   cria serve -m MODEL | --models-dir DIR | --models-preset FILE [--models-max N] [--models-load-timeout S]
//              [-c N] [-np N] [-t N] [--host H] [--port P] [--api-key K]
//              [--chat-template JINJA | --chat-template-file FILE] [--slot-save-path DIR] [--metrics]
//              [-a ALIAS] [-b N] [-ub N] [-ctk T] [-ctv T] [--load-mode M] [--no-repack] [-n N] [--max-tokens N]
//              [--max-queue N] [--cache-ram MIB] [--max-body BYTES] [--max-connections N] [--header-timeout S] [--timeout S] [--no-webui]
//              [-md DRAFT] [--spec-type T[,T]] [--spec-draft-n-max N] ... (speculative decoding in every slot)
//              [--temp T] [--top-k K] [--repeat-last-n N] [--dry-*] [--xtc-*] [--mirostat*] [-l ID(+/-)BIAS] ...
//              (llama-server's sampling flags: the defaults of every request, which may set its own)
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "cria/core/error.h"
#include "cria/core/escapes.h"
#include "cria/media/image_encoder.h"
#include "cria/model/model.h"
#include "cria/runtime/options.h"
#include "cria/sampling/options.h"
#include "cria/server/model_catalog.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "cria/spec/options.h"
#include "tools/command.h"
#include "tools/sampling_flags.h"
#include "tools/lora_flags.h"
#include "tools/spec_flags.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

std::vector<std::string> split_aliases(const std::string& value) {
    std::vector<std::string> out;
    std::stringstream ss(value);
    std::string item;
    while (std::getline(ss, item, ',')) {
        const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
        if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    }
    return out;
}
extern "C" void on_signal(int) { g_stop = 1; }

struct ServeOptions {
    std::string model;
    std::string models_dir;     // router mode: every GGUF model in this directory
    std::string models_preset;  // router mode: llama-server's INI presets
    size_t models_max = 4;
    int models_load_timeout = 600;
    bool no_models_autoload = false;
    int32_t n_ctx = 0;
    int32_t n_parallel = 1;
    int threads = 0;
    int32_t n_batch = 512;
    std::string n_ubatch;
    std::string cache_type_k = "f16";
    std::string cache_type_v = "f16";
    std::string load_mode = "auto";
    bool no_repack = false;
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;
    std::vector<std::string> aliases;
    std::string chat_template;
    std::string chat_template_file;
    std::string slot_save_path;
    std::string mmproj;
    bool metrics = false;
    bool no_webui = false;
    bool parse_special_in_content = false;
    std::string cors_origin;
    int32_t n_predict = -1;
    int timeout = 600;
    int32_t max_queue = 64;
    std::string cache_ram = "8192";  // MiB, llama-server's default
    int32_t max_tokens_cap = -1;
    size_t turn_checkpoint_mib = 256;
    size_t max_body = 8u << 20;
    size_t responses_max = 1024;
    size_t responses_max_bytes = 64u << 20;
    int max_connections = 256;
    int header_timeout = 5;
    cria::spec::SpecParams spec;
    cria::sampling::SamplingFlagState sampling;
    bool jinja = false;
    int32_t keep = 0;
    bool context_shift = false;   // --context-shift
    cria::tools::LoraFlags lora;  // --lora, --lora-scaled
    std::string pooling;          // --pooling
    bool embedding_only = false;  // --embedding(s)
    bool reranking = false;       // --rerank(ing)
};

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<ServeOptions>();
    // -m is read with the other one-dash flags: CLI11 would take "-md FILE" as "-m d".
    cmd.add_option("--model", opt->model, "GGUF model file; also -m FILE");
    cmd.add_option("--models-dir", opt->models_dir,
                   "Router mode: serve every GGUF model in DIR (not recursing; projectors and LoRA adapters left out), "
                   "one process, loaded on first request, selected by a request's \"model\" (file name with or "
                   "without .gguf, or alias)");
    cmd.add_option("--models-preset", opt->models_preset,
                   "Router mode: llama-server's INI preset file, a [NAME] section per model with model = PATH, alias, "
                   "ctx-size, parallel ([*]: defaults for all)");
    cmd.add_option("--models-max", opt->models_max,
                   "Router mode: most models loaded at once (default 4, 0: no limit); loading one more unloads the "
                   "least recently used idle one");
    cmd.add_option("--models-load-timeout", opt->models_load_timeout,
                   "Router mode: seconds a request waits for its model to load (then 504), and an unload for the "
                   "model's requests to end (then 409)");
    cmd.add_flag("--no-models-autoload", opt->no_models_autoload,
                 "Router mode: load models only on POST /models/load (a request for a model not loaded is a 400)");
    cmd.add_flag("--models-autoload", [opt](int64_t) { opt->no_models_autoload = false; },
                 "Router mode: load a model on its first request (the default)");
    cmd.add_option("--ctx-size", opt->n_ctx, "Total context (KV cells), shared by the slots (0: training context per slot); also -c N");
    cmd.add_option("--parallel", opt->n_parallel, "Slots (requests served at once); also -np N");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_option("-b,--batch-size", opt->n_batch, "Most tokens per decode step (prompt chunks share it)");
    cmd.add_option("--ubatch-size", opt->n_ubatch, "Tokens per forward pass (default: the batch size); also -ub N");
    cmd.add_option("--cache-type-k", opt->cache_type_k, "KV cache type of K: f16, f32, bf16, q8_0, q4_0; also -ctk T");
    cmd.add_option("--cache-type-v", opt->cache_type_v, "KV cache type of V; also -ctv T");
    cmd.add_option("--load-mode", opt->load_mode, "auto, none, mmap, mlock, mmap+mlock or dio");
    cmd.add_flag("--no-repack", opt->no_repack,
                 "Multiply the weights as the file stores them (no packed copies for the SIMD kernels)");
    cmd.add_option("--host", opt->host, "Address to listen on (default 127.0.0.1)");
    cmd.add_option("--port", opt->port, "Port (default 8080, 0: any free port)");
    cmd.add_option("--api-key", opt->api_key, "Require this key (Authorization: Bearer KEY or x-api-key) on every route but /health");
    cmd.add_option("-a,--alias", opt->aliases,
                   "Model names listed by /v1/models: comma-separated, repeatable (as llama-server); the first in "
                   "sorted order names the model in responses (default: the file name). Requests may name any model: "
                   "the one loaded serves them");
    cmd.add_option("--chat-template", opt->chat_template, "Jinja chat template source (overrides the model's)");
    cmd.add_option("--chat-template-file", opt->chat_template_file, "File holding the Jinja chat template");
    cmd.add_option("--slot-save-path", opt->slot_save_path, "Directory for POST /slots/N?action=save|restore");
    cmd.add_option("--mmproj", opt->mmproj, "Vision projector GGUF (llama.cpp's mmproj): requests may carry images");
    cmd.add_flag("--metrics", opt->metrics, "Enable GET /metrics (Prometheus)");
    cmd.add_flag("--no-webui", opt->no_webui, "Do not serve the chat page at /");
    cmd.add_option("--cors-origin", opt->cors_origin,
                   "Without --api-key, browser requests from other web origins are refused; allow this one too "
                   "(e.g. https://app.example)");
    cmd.add_flag("--parse-special-in-content", opt->parse_special_in_content,
                 "Turn control-token text in message contents into the tokens (llama-server's behaviour; "
                 "default: contents are plain text, so users cannot forge turns)");
    cmd.add_option("--n-predict", opt->n_predict, "Default most tokens per reply (-1: until the context ends); also -n N");
    cmd.add_option("--timeout", opt->timeout, "Seconds a request may take, queue included");
    cmd.add_option("--turn-checkpoint-mib", opt->turn_checkpoint_mib,
                   "Recurrent and hybrid models: MiB of saved states kept at turn ends, so the next turn evaluates only "
                   "its new tokens (least recently used dropped; 0: none)");
    cmd.add_option("--max-tokens", opt->max_tokens_cap, "Server-wide cap on tokens per reply, whatever a request asks (-1: the slot's context)");
    cmd.add_option("--max-queue", opt->max_queue, "Requests that may wait for a slot; more get 503");
    cmd.add_option("--cache-ram", opt->cache_ram,
                   "Prompt cache: MiB of RAM for the state of prompts that slots let go, reused by any slot whose "
                   "prompt shares their prefix (default 8192, -1: no limit, 0: off); also -cram N");
    cmd.add_option("--max-body", opt->max_body, "Largest request body in bytes");
    cmd.add_option("--responses-max", opt->responses_max,
                   "Responses API conversations kept for previous_response_id (least recently used go first; 0: none)");
    cmd.add_option("--responses-max-bytes", opt->responses_max_bytes,
                   "Bytes of messages those conversations may take in all");
    cmd.add_option("--max-connections", opt->max_connections,
                   "Connections open at once (one thread each); more are answered 503 and closed");
    cmd.add_option("--header-timeout", opt->header_timeout,
                   "Seconds a request's line and headers may take to arrive (then 408 and the connection is closed)");
    cria::tools::add_spec_flags(cmd, opt, &ServeOptions::spec);
    cria::tools::add_sampling_flags(cmd, opt, &ServeOptions::sampling);
    cmd.add_flag("--jinja", opt->jinja,
                 "Accepted for llama-server's command lines: cria always renders chat templates with its Jinja engine");
    cmd.add_option("--keep", opt->keep,
                   "Default n_keep of requests (default: 0, -1 = all): prompt tokens a context shift keeps (the BOS "
                   "is kept too); only with --context-shift");
    cmd.add_flag("--context-shift,!--no-context-shift", opt->context_shift,
                  "Whether to use context shift on infinite text generation (default: disabled): a slot whose "
                  "context is full keeps its first n_keep tokens, drops half of the rest (or the request's "
                  "n_discard) and goes on; refused for models that cannot shift and with speculative decoding");
    cria::tools::add_lora_flags(cmd, &opt->lora);
    cmd.add_option("--pooling", opt->pooling,
                   "Pooling of /v1/embeddings and /v1/rerank: none, mean, cls, last or rank (default: the model's "
                   "pooling_type, else mean)");
    cmd.add_flag("--embedding,--embeddings", opt->embedding_only,
                 "Embeddings only, as llama-server: completions and chat are refused (501); an encoder model "
                 "(bert, nomic-bert) is served so without it");
    cmd.add_flag("--rerank,--reranking", opt->reranking, "Serve /v1/rerank: the same as --pooling rank");
    cmd.allow_extras();  // -m, -md, -c, -np and -n, as llama-server spells them
    return [opt, &cmd]() -> int {
        using namespace cria;
        std::string n_ctx, n_parallel, n_predict, draft_model, seed;
        runtime::take_dash_options(cmd.remaining(), {{"-m", &opt->model},
                                                     {"-s", &seed},
                                                     {"-md", &draft_model},
                                                     {"-c", &n_ctx},
                                                     {"-np", &n_parallel},
                                                     {"-n", &n_predict},
                                                     {"-ub", &opt->n_ubatch},
                                                     {"-ctk", &opt->cache_type_k},
                                                     {"-ctv", &opt->cache_type_v},
                                                     {"-cram", &opt->cache_ram}});
        const bool router_mode = !opt->models_dir.empty() || !opt->models_preset.empty();
        if (router_mode && !opt->model.empty())
            throw Error("give either -m FILE or --models-dir / --models-preset (router mode), not both");
        if (!router_mode && opt->model.empty()) throw Error("no model given (-m FILE, or --models-dir DIR / --models-preset FILE)");
        if (router_mode && !opt->aliases.empty())
            throw Error("-a/--alias names the one model of -m; in router mode give aliases per model in --models-preset (alias = ...)");
        if (router_mode && !opt->mmproj.empty()) throw Error("--mmproj is not supported in router mode (a projector belongs to one model)");
        if (router_mode && (!opt->lora.files.empty() || !opt->lora.scaled_files.empty()))
            throw Error("--lora is not supported in router mode (an adapter belongs to one base model)");
        if (opt->models_load_timeout < 1) throw Error("--models-load-timeout must be positive");
        if (!draft_model.empty()) spec::apply_option(opt->spec, "-md", draft_model);
        if (!seed.empty()) sampling::apply_option(opt->sampling, "-s", seed);
        // llama.cpp processes escapes in the DRY breakers for every tool (its -e is on by default).
        for (auto& b : opt->sampling.params.dry_sequence_breakers) b = process_escapes(b);
        if (opt->keep < -1) throw Error("--keep must be -1 (all) or a count, got " + std::to_string(opt->keep));
        if (!n_predict.empty()) opt->n_predict = n_predict == "-1" ? -1 : static_cast<int32_t>(runtime::parse_count(n_predict, "-n"));
        if (!n_ctx.empty()) opt->n_ctx = static_cast<int32_t>(runtime::parse_count(n_ctx, "-c"));
        if (!n_parallel.empty()) opt->n_parallel = static_cast<int32_t>(runtime::parse_count(n_parallel, "-np"));
        if (opt->n_parallel < 1 || opt->n_parallel > 64) throw Error("-np must be 1..64");
        if (opt->timeout < 1) throw Error("--timeout must be positive");
        if (opt->max_connections < 1) throw Error("--max-connections must be positive");
        if (opt->header_timeout < 1) throw Error("--header-timeout must be positive");

        server::ServerConfig config;
        config.host = opt->host;
        config.port = opt->port;
        config.api_key = opt->api_key;
        for (const auto& value : opt->aliases)
            for (auto& name : split_aliases(value)) config.model_aliases.push_back(std::move(name));
        config.model_path = opt->model;
        config.chat_template = opt->chat_template;
        if (!opt->chat_template_file.empty()) {
            std::ifstream in(opt->chat_template_file, std::ios::binary);
            if (!in) throw Error("cannot open '" + opt->chat_template_file + "'");
            std::ostringstream ss;
            ss << in.rdbuf();
            config.chat_template = ss.str();
        }
        config.slot_save_path = opt->slot_save_path;
        config.metrics = opt->metrics;
        config.webui = !opt->no_webui;
        config.parse_special_in_content = opt->parse_special_in_content;
        config.cors_origin = opt->cors_origin;
        config.request_timeout_s = opt->timeout;
        config.default_max_tokens = opt->n_predict;
        config.default_n_keep = opt->keep;
        config.scheduler.context_shift = opt->context_shift;
        if (opt->context_shift && !opt->mmproj.empty())
            throw Error("--context-shift does not work with --mmproj (an image's tokens cannot be cut in two; "
                        "llama-server turns the shift off there)");
        config.max_body_bytes = opt->max_body;
        config.responses_max_count = opt->responses_max;
        config.responses_max_bytes = opt->responses_max_bytes;
        config.max_connections = opt->max_connections;
        config.header_timeout_s = opt->header_timeout;
        config.scheduler.n_slots = opt->n_parallel;
        config.scheduler.n_batch = opt->n_batch;
        config.scheduler.max_queue = opt->max_queue;
        config.scheduler.max_tokens_cap = opt->max_tokens_cap;
        config.scheduler.turn_checkpoint_bytes = opt->turn_checkpoint_mib << 20;
        config.scheduler.speculative = opt->spec;
        config.default_sampling = opt->sampling.params;
        config.scheduler.prompt_cache_bytes = opt->cache_ram == "-1"
                                                  ? UINT64_MAX
                                                  : uint64_t{runtime::parse_count(opt->cache_ram, "--cache-ram")} << 20;

        server::RuntimeBackendParams bp;
        bp.n_seq = opt->n_parallel;
        bp.n_ctx = opt->n_ctx;
        bp.n_batch = opt->n_batch;
        bp.n_threads = opt->threads;
        if (!opt->n_ubatch.empty()) bp.n_ubatch = static_cast<int32_t>(runtime::parse_count(opt->n_ubatch, "-ub"));
        bp.type_k = runtime::parse_cache_type(opt->cache_type_k);
        bp.type_v = runtime::parse_cache_type(opt->cache_type_v);
        bp.load_mode = runtime::parse_load_mode_or_throw(opt->load_mode);
        bp.repack = !opt->no_repack;
        for (const auto& f : opt->lora.files) bp.lora.emplace_back(f, 1.0f);
        for (const auto& fs : opt->lora.scaled_files) bp.lora.push_back(fs);
        if (opt->reranking && !opt->pooling.empty() && opt->pooling != "rank")
            throw Error("--rerank and --pooling " + opt->pooling + " contradict each other");
        bp.pooling = opt->reranking ? "rank" : opt->pooling;
        bp.embedding_only = opt->embedding_only || opt->reranking;
        std::signal(SIGPIPE, SIG_IGN);
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        if (router_mode) {
            std::vector<server::ModelEntry> models;
            if (!opt->models_dir.empty()) models = server::scan_models_dir(opt->models_dir);
            if (!opt->models_preset.empty()) server::apply_models_preset(opt->models_preset, models);
            if (models.empty()) throw Error("router mode found no models to serve");
            server::RouterConfig rc;
            rc.models = models;
            rc.make_backend = [bp](const server::ModelEntry& e) -> std::unique_ptr<server::Backend> {
                server::RuntimeBackendParams p = bp;
                if (e.n_ctx >= 0) p.n_ctx = e.n_ctx;
                if (e.n_parallel > 0) p.n_seq = e.n_parallel;
                auto backend = std::make_unique<server::RuntimeBackend>(e.path, p);
                std::fprintf(stderr, "cria serve: model '%s': %s\n", e.name.c_str(), backend->describe_settings().c_str());
                return backend;
            };
            rc.limits.max_loaded = opt->models_max;
            rc.limits.load_timeout = std::chrono::seconds(opt->models_load_timeout);
            rc.limits.autoload = !opt->no_models_autoload;
            rc.estimate = [bp](const server::ModelEntry& e) {
                return server::estimate_model_bytes(e, e.n_ctx >= 0 ? e.n_ctx : bp.n_ctx, e.n_parallel > 0 ? e.n_parallel : bp.n_seq);
            };
            rc.available = [] { return server::available_memory_bytes(); };
            server::Server srv(std::move(rc), config);
            srv.start();
            std::fprintf(stderr, "cria serve: router mode, %zu models (at most %zu loaded), listening on http://%s:%d\n",
                         models.size(), opt->models_max, opt->host.c_str(), srv.port());
            for (const auto& e : models) std::fprintf(stderr, "cria serve:   %s  %s\n", e.name.c_str(), e.path.c_str());
            std::fflush(stderr);
            while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
            std::fprintf(stderr, "cria serve: stopping\n");
            srv.stop();
            srv.wait();
            return 0;
        }
        std::fprintf(stderr, "cria serve: loading %s\n", opt->model.c_str());
        auto backend = std::make_unique<server::RuntimeBackend>(opt->model, bp);
        std::fprintf(stderr, "cria serve: %s\n", backend->describe_settings().c_str());
        const int32_t per_slot = backend->n_ctx_per_seq();
        if (!opt->mmproj.empty()) {
            config.image_encoder = std::make_shared<media::ImageEncoder>(opt->mmproj, opt->threads);
            const auto& hp = backend->model().hparams();
            if (config.image_encoder->n_output() != static_cast<int64_t>(hp.n_embd))
                throw Error("the projector outputs " + std::to_string(config.image_encoder->n_output()) +
                            " values per token but the text model's width is " + std::to_string(hp.n_embd));
            std::fprintf(stderr, "cria serve: vision projector %s (%s)\n", opt->mmproj.c_str(),
                         std::string(vision::projector_type_name(config.image_encoder->mmproj().hparams().projector)).c_str());
        }
        server::Server srv(std::move(backend), config);
        srv.start();
        std::fprintf(stderr, "cria serve: listening on http://%s:%d (%d slots of %d tokens)%s%s\n", opt->host.c_str(),
                     srv.port(), opt->n_parallel, per_slot, opt->api_key.empty() ? "" : ", API key required",
                     opt->spec.enabled() ? ", speculative decoding on" : "");
        std::fflush(stderr);
        while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::fprintf(stderr, "cria serve: stopping\n");
        srv.stop();
        srv.wait();
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(serve, "serve", "OpenAI- and Anthropic-compatible HTTP server with a web chat page", setup);
