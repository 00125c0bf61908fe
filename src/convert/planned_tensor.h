#pragma once
// One tensor of the GGUF file a conversion writes: where its values come from
// in the checkpoint and how they are changed on the way. Shared by the
// converter and the family-specific planners (experts, MXFP4 blocks).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cria/core/element_type.h"

namespace cria::convert {

struct Planned {
    std::string name;                 // GGUF name
    std::string source;               // Hugging Face name ("" for generated or stacked tensors)
    std::vector<std::string> stacked; // or one Hugging Face tensor per expert, stacked outermost
    std::vector<uint64_t> shape;      // GGUF order (innermost first)
    std::function<void(std::vector<float>&)> transform;
    std::vector<float> generated;     // data of a generated tensor (rope factors)
    // Tensors copied in a block format of their own (gpt-oss's MXFP4 experts):
    // the type is fixed and `raw` produces the bytes.
    std::optional<ElementType> raw_type;
    std::function<std::vector<uint8_t>()> raw;
    int layer = -1;
    int role = 0;                     // position within a block, for llama.cpp's order
    bool is_bias = false;
};

}  // namespace cria::convert
