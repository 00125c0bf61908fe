#pragma once
// GPT-2's reversible byte <-> printable character mapping used by byte-level
// BPE: printable Latin-1 bytes stand for themselves, the other 68 bytes are
// shifted to U+0100.. so every token is printable text.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cria::vocab::byte_encoding {

// UTF-8 text of the character standing for `byte`.
const std::string& byte_to_text(uint8_t byte);
// The byte a character stands for, if it stands for one.
std::optional<uint8_t> code_point_to_byte(uint32_t cp);

}  // namespace cria::vocab::byte_encoding
