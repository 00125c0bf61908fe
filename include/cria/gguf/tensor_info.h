#pragma once
// Where one tensor lives in a GGUF file and what shape and type it has.

#include <array>
#include <cstdint>
#include <string>

#include "cria/core/element_type.h"

namespace cria::gguf {

// GGUF (and ggml) allow at most this many dimensions.
inline constexpr uint32_t kMaxDims = 4;

struct TensorInfo {
    std::string name;
    ElementType type = ElementType::F32;
    uint32_t n_dims = 0;
    // Extent of each dimension, innermost (contiguous) first, like ggml's ne[];
    // dimensions past n_dims are 1.
    std::array<uint64_t, kMaxDims> ne{1, 1, 1, 1};
    uint64_t offset = 0;   // from the start of the data section
    uint64_t n_bytes = 0;  // size of the tensor's data

    uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

}  // namespace cria::gguf
