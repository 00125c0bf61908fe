// One model being served (see served_model.h).
#include "served_model.h"

#include <algorithm>

namespace cria::server {

ServedModel::ServedModel(std::unique_ptr<Backend> b, const ServerConfig& config, std::vector<std::string> model_names,
                         std::string model_path)
    : backend(std::move(b)), names(std::move(model_names)), path(std::move(model_path)) {
    const std::string tmpl = config.chat_template.empty() ? backend->chat_template() : config.chat_template;
    formatter = std::make_unique<ChatFormatter>(backend->vocab(), tmpl);
    formatter->set_parse_special_in_content(config.parse_special_in_content);
    if (config.image_encoder) formatter->set_image_delimiters(config.image_encoder->delimiters());
    scheduler = std::make_unique<Scheduler>(*backend, config.scheduler);
    names.erase(std::remove(names.begin(), names.end(), std::string()), names.end());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.empty()) names.push_back(backend->model_name());
    model_id = names.front();
}

ServedModel::~ServedModel() {
    scheduler.reset();  // its thread stops before the backend it drives goes
}

}  // namespace cria::server
