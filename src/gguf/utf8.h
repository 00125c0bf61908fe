#pragma once
// Strict UTF-8 validation for keys and tensor names read from files.

#include <string_view>

namespace cria::gguf {

// True when `s` is well-formed UTF-8: no overlong forms, no surrogates,
// nothing above U+10FFFF, no truncated sequences. NUL bytes are rejected too,
// since keys and names are also used as C strings by other tools.
bool is_valid_utf8(std::string_view s);

}  // namespace cria::gguf
