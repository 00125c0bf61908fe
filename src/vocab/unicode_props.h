#pragma once
// Unicode character properties as the tokenizers need them (categories from
// utf8proc; the whitespace set is Unicode's White_Space, as llama.cpp uses).

#include <cstdint>

namespace cria::vocab::unicode {

struct CharClass {
    bool letter = false;       // \p{L}
    bool number = false;       // \p{N}
    bool mark = false;         // \p{M}
    bool punctuation = false;  // \p{P}
    bool symbol = false;       // \p{S}
    bool control = false;      // Cc, Cf, Cs, Co
    bool whitespace = false;   // White_Space
};

CharClass classify(uint32_t cp);
bool is_whitespace(uint32_t cp);
uint32_t to_lower(uint32_t cp);
// First code point of the canonical decomposition (what llama.cpp's NFD table
// keeps: "é" -> "e", the combining mark is dropped).
uint32_t nfd_base(uint32_t cp);

}  // namespace cria::vocab::unicode
