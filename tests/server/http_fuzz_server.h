#pragma once
// The server the HTTP fuzz target drives, shared with the test that replays
// its corpus and crash inputs: keyless on loopback (port 8080, as the
// inputs' Host headers say), metrics on, a stub backend, generations capped
// at 8 tokens so every input runs quickly.
#include <memory>
#include <string>

#include "cria/server/server.h"
#include "server/stub_backend.h"

namespace cria::test {

inline std::unique_ptr<server::Server> make_http_fuzz_server(const std::string& vocab_gguf) {
    server::ServerConfig config;
    config.port = 8080;
    config.model_path = vocab_gguf;
    config.metrics = true;
    config.max_body_bytes = 64 * 1024;
    config.request_timeout_s = 10;
    config.scheduler.n_slots = 2;
    config.scheduler.max_queue = 2;
    config.scheduler.max_tokens_cap = 8;
    return std::make_unique<server::Server>(std::make_unique<StubBackend>(vocab_gguf), config);
}

}  // namespace cria::test
