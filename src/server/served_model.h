#pragma once
// One model being served: its backend, chat formatter and scheduler, and
// the names it answers to. A single-model server has one for its whole
// life; a router (cria/server/model_router.h) makes and drops them.
#include <memory>
#include <string>
#include <vector>

#include "chat_prompt.h"
#include "cria/server/backend.h"
#include "cria/server/model_router.h"
#include "cria/server/scheduler.h"
#include "cria/server/server.h"

namespace cria::server {

struct ServedModel : LoadedModel {
    // Builds the formatter (the config's template, else the model's) and the
    // scheduler over `backend`. Throws cria::Error when the template does not parse.
    ServedModel(std::unique_ptr<Backend> backend, const ServerConfig& config, std::vector<std::string> names,
                std::string path);
    ~ServedModel() override;

    // Declared in the order they are built; the scheduler goes first.
    std::unique_ptr<Backend> backend;
    std::unique_ptr<ChatFormatter> formatter;
    std::unique_ptr<Scheduler> scheduler;
    std::vector<std::string> names;  // listed by /v1/models (sorted, unique)
    std::string model_id;            // names the model in replies: names.front()
    std::string path;                // the GGUF file (/props)
};

}  // namespace cria::server
