#pragma once
// UTF-8 helpers with llama.cpp's tolerance for bad input: a byte that does not
// start a well-formed sequence decodes as U+FFFD and consumes one byte, so
// every byte string has exactly one decoding and tokenizing never fails.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cria::vocab::utf8 {

inline constexpr uint32_t kReplacement = 0xFFFD;

// Length of the sequence a lead byte announces (1 for continuation bytes and
// ASCII, 2..4 otherwise), without looking at what follows. SPM and BPE split
// their initial symbols with it, exactly like llama.cpp.
inline size_t sequence_length(unsigned char lead) {
    static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

// Decodes one code point at `offset` and advances it. Checks only lead and
// continuation bit patterns (like llama.cpp): overlong forms and surrogates
// decode; malformed input gives U+FFFD and advances one byte.
uint32_t decode(std::string_view text, size_t& offset);

std::vector<uint32_t> decode_all(std::string_view text);

// Appends the UTF-8 form of `cp` (code points above U+10FFFF and surrogates
// are written as U+FFFD so the result is always valid UTF-8).
void append(std::string& out, uint32_t cp);
std::string encode(uint32_t cp);

// Re-encodes text so it is valid UTF-8: every code point as decode() sees it,
// written canonically. This is what llama.cpp's BPE and WPM paths see.
std::string sanitize(std::string_view text);

// Length of the longest prefix of `bytes` that does not end inside a
// sequence that more bytes could still complete. Invalid bytes count as
// complete (they will never become valid).
size_t complete_prefix_length(std::string_view bytes);

}  // namespace cria::vocab::utf8
