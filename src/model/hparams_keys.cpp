#include "model/hparams_keys.h"

#include "cria/core/error.h"
#include "cria/gguf/file.h"

namespace cria::model {

std::string HParamsKeys::key(std::string_view suffix) const { return file_.arch_key(suffix); }

bool HParamsKeys::has(std::string_view suffix) const { return file_.find(key(suffix)) != nullptr; }

bool HParamsKeys::is_array(std::string_view suffix) const {
    const gguf::Value* v = file_.find(key(suffix));
    return v != nullptr && v->is_array();
}

bool HParamsKeys::has_tensor(std::string_view name) const { return file_.find_tensor(name) != nullptr; }

std::optional<uint32_t> HParamsKeys::u32(std::string_view suffix) const {
    if (is_array(suffix)) fail("'" + key(suffix) + "' must be one value here, not an array");
    return file_.get_u32(key(suffix));
}

uint32_t HParamsKeys::u32(std::string_view suffix, uint32_t fallback) const { return u32(suffix).value_or(fallback); }

uint32_t HParamsKeys::require_u32(std::string_view suffix) const {
    const auto v = u32(suffix);
    if (!v) fail("missing hyperparameter '" + key(suffix) + "'");
    return *v;
}

uint32_t HParamsKeys::u32_or_unset(std::string_view suffix, uint32_t fallback) const {
    const uint32_t v = u32(suffix, 0);
    return v != 0 ? v : fallback;
}

std::vector<uint32_t> HParamsKeys::u32_per_layer(std::string_view suffix, uint32_t n_layer) const {
    const gguf::Value* v = file_.find(key(suffix));
    if (v == nullptr) return {};
    if (!v->is_array()) return std::vector<uint32_t>(n_layer, *file_.get_u32(key(suffix)));
    if (v->size() != n_layer)
        fail("'" + key(suffix) + "' has " + std::to_string(v->size()) + " values, one per layer (" +
             std::to_string(n_layer) + ") expected");
    std::vector<uint32_t> out(n_layer);
    for (uint32_t i = 0; i < n_layer; ++i) {
        const auto x = v->at(i).as_u64();
        if (!x || *x > UINT32_MAX) fail("'" + key(suffix) + "' must hold integers in 0..4294967295");
        out[i] = static_cast<uint32_t>(*x);
    }
    return out;
}

std::vector<bool> HParamsKeys::layer_flags(std::string_view suffix, uint32_t n_layer) const {
    const gguf::Value* v = file_.find(key(suffix));
    if (v == nullptr) return {};
    if (!v->is_array()) fail("'" + key(suffix) + "' must be an array of one flag per layer here");
    if (v->size() != n_layer)
        fail("'" + key(suffix) + "' has " + std::to_string(v->size()) + " values, one per layer (" +
             std::to_string(n_layer) + ") expected");
    std::vector<bool> out(n_layer);
    for (uint32_t i = 0; i < n_layer; ++i) {
        const gguf::Value e = v->at(i);
        if (const auto b = e.as_bool()) {
            out[i] = *b;
        } else if (const auto x = e.as_i64()) {
            out[i] = *x != 0;
        } else if (const auto u = e.as_u64()) {
            out[i] = *u != 0;
        } else {
            fail("'" + key(suffix) + "' must hold booleans or integers");
        }
    }
    return out;
}

float HParamsKeys::f32(std::string_view suffix, float fallback) const { return file_.get_f32(key(suffix), fallback); }

float HParamsKeys::f32_or_unset(std::string_view suffix, float fallback) const {
    const float v = f32(suffix, 0.0f);
    return v != 0.0f ? v : fallback;
}

bool HParamsKeys::boolean(std::string_view suffix, bool fallback) const {
    return file_.get_bool(key(suffix), fallback);
}

std::string HParamsKeys::string(std::string_view suffix, const std::string& fallback) const {
    return file_.get_string(key(suffix), fallback);
}

void HParamsKeys::fail(const std::string& what) const { throw Error(file_.path() + ": " + what); }

}  // namespace cria::model
