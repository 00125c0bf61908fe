#pragma once
// The "file types" of a quantized model: llama.cpp's LLAMA_FTYPE_* values
// (written as general.file_type) and the names users type ("Q4_K_M").
//
// A file type is a recipe, not one tensor type: Q4_K_M means "mostly Q4_K",
// with some tensors given more bits (see type_mix.h).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cria/core/element_type.h"

namespace cria::quantizer {

// The numbers are llama.cpp's LLAMA_FTYPE enum (llama.h); they are stored in
// general.file_type, so they must never change.
enum class FileType : uint32_t {
    ALL_F32 = 0,
    MOSTLY_F16 = 1,
    MOSTLY_Q4_0 = 2,
    MOSTLY_Q4_1 = 3,
    MOSTLY_Q8_0 = 7,
    MOSTLY_Q5_0 = 8,
    MOSTLY_Q5_1 = 9,
    MOSTLY_Q2_K = 10,
    MOSTLY_Q3_K_S = 11,
    MOSTLY_Q3_K_M = 12,
    MOSTLY_Q3_K_L = 13,
    MOSTLY_Q4_K_S = 14,
    MOSTLY_Q4_K_M = 15,
    MOSTLY_Q5_K_S = 16,
    MOSTLY_Q5_K_M = 17,
    MOSTLY_Q6_K = 18,
    MOSTLY_Q2_K_S = 21,
    MOSTLY_IQ4_NL = 25,
    MOSTLY_IQ4_XS = 30,
    MOSTLY_BF16 = 32,
    MOSTLY_MXFP4_MOE = 38,
};

struct FileTypeInfo {
    FileType type;
    std::string_view name;         // as llama-quantize accepts it: "Q4_K_M"
    ElementType default_type;      // what most tensors become
    std::string_view description;
};

// Every file type cria can write, in llama-quantize's listing order.
const std::vector<FileTypeInfo>& file_types();

// Looks up a name (case-insensitive) or a number ("15"). Nothing if unknown.
std::optional<FileTypeInfo> file_type_from_name(std::string_view name);

const FileTypeInfo* file_type_info(FileType t);

// "Q4_K_M, Q4_K_S, ..." for error messages and --help.
std::string file_type_names();

}  // namespace cria::quantizer
