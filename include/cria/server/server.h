#pragma once
// The HTTP server behind `cria serve`: OpenAI- and Anthropic-compatible
// routes, llama-server's utility routes and the web chat page, over one
// Scheduler. Handlers run on a thread per connection (bounded_http_server.h);
// generation runs on the scheduler's thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cria/media/image_encoder.h"
#include "cria/server/backend.h"
#include "cria/server/model_router.h"
#include "cria/sampling/params.h"
#include "cria/server/scheduler.h"

namespace cria::server {

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;                    // 0: any free port (see Server::port())
    std::string api_key;                // empty: no authentication
    // --alias: the names GET /v1/models lists. As llama-server (a std::set),
    // they are sorted and unique, and the first names the model in every
    // response's "model" field. Empty: the model file's name. With one model
    // loaded, a request's "model" may be anything: it is served all the same.
    std::vector<std::string> model_aliases;
    std::string model_path;             // shown by /props
    std::string chat_template;          // Jinja source; empty: the model's, else a ChatML default
    std::string slot_save_path;         // directory for /slots save/restore; empty: disabled
    bool metrics = false;               // enable GET /metrics
    bool webui = true;                  // serve the chat page at GET /
    size_t max_body_bytes = 8u << 20;   // larger request bodies get 413
    // Parse message contents for control tokens as llama-server does ("<|im_start|>"
    // typed by a user becomes the token). Off: contents are text.
    bool parse_special_in_content = false;
    // Without api_key, browser requests from other origins are refused (403);
    // this one origin ("https://app.example") is allowed too (--cors-origin).
    std::string cors_origin;
    int header_timeout_s = 5;           // a request's line and headers must arrive within this (408 after)
    int read_timeout_s = 60;            // its body within this after the headers (408 after)
    int write_timeout_s = 600;          // a client not reading for this long is dropped
    int max_connections = 256;          // open at once (one thread each); more are answered 503
    int request_timeout_s = 600;        // a generation (queue included) is stopped after this
    int32_t default_max_tokens = -1;    // when a request gives none (-1: until the context ends)
    int32_t default_n_keep = 0;         // n_keep when a request gives none (--keep; -1: the whole prompt)
    // Responses API conversations kept for previous_response_id: at most this
    // many, and this many bytes of messages (least recently used go first).
    size_t responses_max_count = 1024;
    size_t responses_max_bytes = 64u << 20;
    // What a request does not set (temperature, top_k, penalties, DRY, ...):
    // llama.cpp's defaults, or `cria serve`'s sampling flags (as llama-server).
    sampling::SamplingParams default_sampling;
    // The vision projector (--mmproj); null: requests with images get 400.
    // Its output width must be the model's (the caller checks).
    std::shared_ptr<media::ImageEncoder> image_encoder;
    SchedulerOptions scheduler;
};

// Router mode (`cria serve --models-dir` / `--models-preset`): the models,
// how to load one's backend (its per-model options applied), and the
// router's limits and memory check (model_router.h).
struct RouterConfig {
    std::vector<ModelEntry> models;
    std::function<std::unique_ptr<Backend>(const ModelEntry&)> make_backend;
    RouterLimits limits;
    ModelRouter::MemoryEstimate estimate;    // empty: memory is not checked
    ModelRouter::MemoryAvailable available;
};

class Server {
public:
    // One model: takes the backend; throws cria::Error when the chat template does not parse.
    Server(std::unique_ptr<Backend> backend, ServerConfig config);
    // Router mode: a request's "model" (or ?model=) picks one of router.models,
    // loaded on first use. config.model_aliases and model_path are not used.
    Server(RouterConfig router, ServerConfig config);
    ~Server();

    // Binds (throws cria::Error when it cannot) and serves on a thread of its own.
    void start();
    // Blocks until stop() (or a signal handler calling stop()).
    void wait();
    void stop();
    int port() const;  // the bound port
    // Serves the HTTP/1.1 requests in `bytes` as one kept-alive connection
    // would, with no socket (the fuzz target and its replay test). Needs no start().
    struct Exchange {
        std::string reply;          // all that was written back
        std::vector<int> statuses;  // the status of each answer, in order
    };
    Exchange serve_bytes(std::string_view bytes);
    // The one model's scheduler; throws cria::Error in router mode.
    Scheduler& scheduler();
    // The router (null with one model).
    std::shared_ptr<ModelRouter> router() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace cria::server
