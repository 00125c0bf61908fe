#include "model/recurrent_layer_flags.h"

#include <optional>
#include <string>

#include "cria/gguf/file.h"

namespace cria::model {

std::vector<bool> recurrent_layer_flags(const HParamsKeys& keys, uint32_t n_blocks, uint32_t default_interval) {
    std::vector<bool> out(n_blocks);
    const std::string key = keys.key("attention.recurrent_layers");
    if (const gguf::Value* v = keys.file().find(key)) {
        if (!v->is_array()) {
            const auto flag = v->as_bool() ? std::optional<uint64_t>(*v->as_bool()) : v->as_u64();
            if (!flag) keys.fail("'" + key + "' must hold integers or booleans");
            out.assign(n_blocks, *flag != 0);
            return out;
        }
        if (v->size() != n_blocks)
            keys.fail("'" + key + "' has " + std::to_string(v->size()) + " values, one per block (" +
                      std::to_string(n_blocks) + ") expected");
        for (uint32_t i = 0; i < n_blocks; ++i) {
            const gguf::Value& e = v->at(i);
            const auto flag = e.as_bool() ? std::optional<uint64_t>(*e.as_bool()) : e.as_u64();
            if (!flag) keys.fail("'" + key + "' must hold integers or booleans");
            out[i] = *flag != 0;
        }
        return out;
    }
    const uint32_t interval = keys.u32("full_attention_interval", default_interval);
    if (interval == 0) keys.fail("'" + keys.key("full_attention_interval") + "' must be positive");
    for (uint32_t i = 0; i < n_blocks; ++i) out[i] = (i + 1) % interval != 0;
    return out;
}

}  // namespace cria::model
