#pragma once
// Element types of tensors, with the exact ids and block geometry of GGUF/ggml.
// A quantized type stores `block_size` values in `type_size` bytes.

#include <cstdint>
#include <optional>
#include <string_view>

namespace cria {

enum class ElementType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    // 4 and 5 were Q4_2 and Q4_3, removed from ggml.
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    // 31..33 were the Q4_0_x_y repacked types, removed from ggml.
    TQ1_0 = 34,
    TQ2_0 = 35,
    // 36..38 were the IQ4_NL_x_y repacked types, removed from ggml.
    MXFP4 = 39,
};

struct ElementTypeInfo {
    ElementType type;
    std::string_view name;   // as ggml spells it: "f32", "q4_0", "q4_K", ...
    uint32_t block_size;     // values per block (1 for plain types)
    uint32_t type_size;      // bytes per block
    bool quantized;
};

// Geometry of a known type id, or nullptr for an id ggml does not define.
const ElementTypeInfo* element_type_info(uint32_t id);
inline const ElementTypeInfo* element_type_info(ElementType t) {
    return element_type_info(static_cast<uint32_t>(t));
}

// ggml's name of the type ("q4_K"); "unknown" for an undefined id.
std::string_view element_type_name(ElementType t);

// Parses a ggml type name, case-insensitively ("Q4_K", "q8_0", "bf16").
std::optional<ElementType> element_type_from_name(std::string_view name);

// Bytes needed for `n_values` values of type `t` in one row. Returns nothing
// when `n_values` is not a whole number of blocks, the type is unknown, or the
// size would overflow 64 bits.
std::optional<uint64_t> row_size_bytes(ElementType t, uint64_t n_values);

}  // namespace cria
