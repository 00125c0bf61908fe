#pragma once
// Small UTF-8 helpers for the grammar module (private).

#include <cstdint>
#include <string>
#include <string_view>

namespace cria::grammar::utf8 {

// Decodes one code point at s[pos], advancing pos. False on invalid or
// truncated sequences (pos is then left unchanged).
inline bool decode_one(std::string_view s, size_t& pos, uint32_t& cp) {
    if (pos >= s.size()) return false;
    auto b = static_cast<uint8_t>(s[pos]);
    int n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || pos + static_cast<size_t>(n) > s.size()) return false;
    uint32_t v = n == 1 ? b : n == 2 ? (b & 0x1Fu) : n == 3 ? (b & 0x0Fu) : (b & 0x07u);
    for (int i = 1; i < n; ++i) {
        auto c = static_cast<uint8_t>(s[pos + static_cast<size_t>(i)]);
        if ((c & 0xC0) != 0x80) return false;
        v = (v << 6) | (c & 0x3Fu);
    }
    if (v > 0x10FFFF) return false;
    cp = v;
    pos += static_cast<size_t>(n);
    return true;
}

inline void append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace cria::grammar::utf8
