#pragma once
// Reading an architecture's hyperparameter keys with llama.cpp's semantics:
// keys are "<arch>.<suffix>", most are optional, and for many of them a zero
// means "not set" (llama.cpp's saver writes every key it knows, zeros
// included). Errors name the file and the key.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cria::gguf {
class File;
}

namespace cria::model {

class HParamsKeys {
public:
    explicit HParamsKeys(const gguf::File& file) : file_(file) {}

    const gguf::File& file() const { return file_; }
    std::string key(std::string_view suffix) const;
    bool has(std::string_view suffix) const;
    bool is_array(std::string_view suffix) const;
    // Whether the file has the tensor `name` (some knobs follow from tensors).
    bool has_tensor(std::string_view name) const;

    std::optional<uint32_t> u32(std::string_view suffix) const;
    uint32_t u32(std::string_view suffix, uint32_t fallback) const;
    uint32_t require_u32(std::string_view suffix) const;
    // The key's value, or `fallback` when it is absent or zero.
    uint32_t u32_or_unset(std::string_view suffix, uint32_t fallback) const;
    // A scalar, or an array with one value per layer (llama.cpp's
    // get_key_or_arr): n_layer values, or an empty vector when absent.
    std::vector<uint32_t> u32_per_layer(std::string_view suffix, uint32_t n_layer) const;
    // An array of n_layer flags (bool or integer entries; an entry is set
    // when it is not 0), as llama.cpp reads a per-layer bool array with
    // get_key_or_arr. Empty when absent; fails for a scalar, another length
    // or another element type.
    std::vector<bool> layer_flags(std::string_view suffix, uint32_t n_layer) const;

    float f32(std::string_view suffix, float fallback) const;
    float f32_or_unset(std::string_view suffix, float fallback) const;
    bool boolean(std::string_view suffix, bool fallback) const;
    std::string string(std::string_view suffix, const std::string& fallback) const;

    [[noreturn]] void fail(const std::string& what) const;

private:
    const gguf::File& file_;
};

}  // namespace cria::model
