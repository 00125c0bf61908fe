// llama.cpp's string_process_escapes, rule for rule (see escapes.h).

#include "cria/core/escapes.h"

namespace cria {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string process_escapes(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    const size_t n = text.size();
    for (size_t i = 0; i < n; ++i) {
        if (text[i] != '\\' || i + 1 >= n) {  // a trailing backslash stays
            out += text[i];
            continue;
        }
        const char c = text[++i];
        switch (c) {
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case 'x':
                // Two hex digits must follow; else the escape stays as written.
                if (i + 2 < n && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
                    out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
                    i += 2;
                    break;
                }
                [[fallthrough]];
            default:
                out += '\\';
                out += c;
                break;
        }
    }
    return out;
}

}  // namespace cria
