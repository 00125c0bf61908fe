#include "cria/core/element_type.h"

#include <array>
#include <cctype>

namespace cria {
namespace {

constexpr uint32_t QK_K = 256;  // super-block size of the K-quants and i-quants

// Sizes follow ggml's block structs (ggml-common.h) byte for byte.
constexpr std::array kTypes = {
    ElementTypeInfo{ElementType::F32, "f32", 1, 4, false},
    ElementTypeInfo{ElementType::F16, "f16", 1, 2, false},
    ElementTypeInfo{ElementType::Q4_0, "q4_0", 32, 2 + 16, true},
    ElementTypeInfo{ElementType::Q4_1, "q4_1", 32, 2 + 2 + 16, true},
    ElementTypeInfo{ElementType::Q5_0, "q5_0", 32, 2 + 4 + 16, true},
    ElementTypeInfo{ElementType::Q5_1, "q5_1", 32, 2 + 2 + 4 + 16, true},
    ElementTypeInfo{ElementType::Q8_0, "q8_0", 32, 2 + 32, true},
    ElementTypeInfo{ElementType::Q8_1, "q8_1", 32, 2 + 2 + 32, true},
    ElementTypeInfo{ElementType::Q2_K, "q2_K", QK_K, QK_K / 16 + QK_K / 4 + 2 + 2, true},
    ElementTypeInfo{ElementType::Q3_K, "q3_K", QK_K, QK_K / 8 + QK_K / 4 + 12 + 2, true},
    ElementTypeInfo{ElementType::Q4_K, "q4_K", QK_K, 2 + 2 + 12 + QK_K / 2, true},
    ElementTypeInfo{ElementType::Q5_K, "q5_K", QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2, true},
    ElementTypeInfo{ElementType::Q6_K, "q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, true},
    ElementTypeInfo{ElementType::Q8_K, "q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2, true},
    ElementTypeInfo{ElementType::IQ2_XXS, "iq2_xxs", QK_K, 2 + QK_K / 8 * 2, true},
    ElementTypeInfo{ElementType::IQ2_XS, "iq2_xs", QK_K, 2 + QK_K / 8 * 2 + QK_K / 32, true},
    ElementTypeInfo{ElementType::IQ3_XXS, "iq3_xxs", QK_K, 2 + 3 * QK_K / 8, true},
    ElementTypeInfo{ElementType::IQ1_S, "iq1_s", QK_K, 2 + QK_K / 8 + QK_K / 32 * 2, true},
    ElementTypeInfo{ElementType::IQ4_NL, "iq4_nl", 32, 2 + 16, true},
    ElementTypeInfo{ElementType::IQ3_S, "iq3_s", QK_K, 2 + QK_K / 4 + QK_K / 32 + QK_K / 8 + QK_K / 64, true},
    ElementTypeInfo{ElementType::IQ2_S, "iq2_s", QK_K, 2 + QK_K / 4 + QK_K / 32 + QK_K / 32, true},
    ElementTypeInfo{ElementType::IQ4_XS, "iq4_xs", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2, true},
    ElementTypeInfo{ElementType::I8, "i8", 1, 1, false},
    ElementTypeInfo{ElementType::I16, "i16", 1, 2, false},
    ElementTypeInfo{ElementType::I32, "i32", 1, 4, false},
    ElementTypeInfo{ElementType::I64, "i64", 1, 8, false},
    ElementTypeInfo{ElementType::F64, "f64", 1, 8, false},
    ElementTypeInfo{ElementType::IQ1_M, "iq1_m", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, true},
    ElementTypeInfo{ElementType::BF16, "bf16", 1, 2, false},
    ElementTypeInfo{ElementType::TQ1_0, "tq1_0", QK_K, (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64 + 2, true},
    ElementTypeInfo{ElementType::TQ2_0, "tq2_0", QK_K, QK_K / 4 + 2, true},
    ElementTypeInfo{ElementType::MXFP4, "mxfp4", 32, 1 + 16, true},
};

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    }
    return true;
}

}  // namespace

const ElementTypeInfo* element_type_info(uint32_t id) {
    for (const auto& info : kTypes) {
        if (static_cast<uint32_t>(info.type) == id) return &info;
    }
    return nullptr;
}

std::string_view element_type_name(ElementType t) {
    const ElementTypeInfo* info = element_type_info(t);
    return info ? info->name : std::string_view("unknown");
}

std::optional<ElementType> element_type_from_name(std::string_view name) {
    for (const auto& info : kTypes) {
        if (iequals(info.name, name)) return info.type;
    }
    return std::nullopt;
}

std::optional<uint64_t> row_size_bytes(ElementType t, uint64_t n_values) {
    const ElementTypeInfo* info = element_type_info(t);
    if (!info || n_values % info->block_size != 0) return std::nullopt;
    const uint64_t blocks = n_values / info->block_size;
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(blocks, uint64_t{info->type_size}, &bytes)) return std::nullopt;
    return bytes;
}

}  // namespace cria
