#include "vocab/utf8.h"

namespace cria::vocab::utf8 {

namespace {
bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }
}  // namespace

uint32_t decode(std::string_view text, size_t& offset) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    const unsigned char c0 = s[offset];
    if (c0 < 0x80) {
        offset += 1;
        return c0;
    }
    if ((c0 & 0xE0) == 0xC0) {
        if (offset + 1 < n && is_continuation(s[offset + 1])) {
            const uint32_t cp = ((c0 & 0x1Fu) << 6) | (s[offset + 1] & 0x3Fu);
            offset += 2;
            return cp;
        }
    } else if ((c0 & 0xF0) == 0xE0) {
        if (offset + 2 < n && is_continuation(s[offset + 1]) && is_continuation(s[offset + 2])) {
            const uint32_t cp = ((c0 & 0x0Fu) << 12) | ((s[offset + 1] & 0x3Fu) << 6) | (s[offset + 2] & 0x3Fu);
            offset += 3;
            return cp;
        }
    } else if ((c0 & 0xF8) == 0xF0) {
        if (offset + 3 < n && is_continuation(s[offset + 1]) && is_continuation(s[offset + 2]) &&
            is_continuation(s[offset + 3])) {
            const uint32_t cp = ((c0 & 0x07u) << 18) | ((s[offset + 1] & 0x3Fu) << 12) |
                                ((s[offset + 2] & 0x3Fu) << 6) | (s[offset + 3] & 0x3Fu);
            offset += 4;
            return cp;
        }
    }
    offset += 1;  // continuation byte, 0xF8..0xFF, or a truncated sequence
    return kReplacement;
}

std::vector<uint32_t> decode_all(std::string_view text) {
    std::vector<uint32_t> cps;
    cps.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) cps.push_back(decode(text, offset));
    return cps;
}

void append(std::string& out, uint32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacement;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string encode(uint32_t cp) {
    std::string s;
    append(s, cp);
    return s;
}

std::string sanitize(std::string_view text) {
    // Fast path: pure ASCII runs are copied as they are.
    std::string out;
    out.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) {
        const auto c = static_cast<unsigned char>(text[offset]);
        if (c < 0x80) {
            out.push_back(static_cast<char>(c));
            ++offset;
            continue;
        }
        append(out, decode(text, offset));
    }
    return out;
}

size_t complete_prefix_length(std::string_view bytes) {
    // Only the last three bytes can belong to an unfinished sequence.
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(bytes[n - back]);
        if (is_continuation(c)) continue;
        if (c < 0x80) return n;
        const size_t need = sequence_length(c);
        if ((c & 0xF8) == 0xF8) return n;  // never valid
        // The lead byte and all bytes after it must be continuations so far.
        return need > back ? n - back : n;
    }
    return n;
}

}  // namespace cria::vocab::utf8
