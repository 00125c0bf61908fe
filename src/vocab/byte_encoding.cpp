#include "vocab/byte_encoding.h"

#include <array>

#include "vocab/utf8.h"

namespace cria::vocab::byte_encoding {

namespace {

bool stands_for_itself(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Tables {
    std::array<std::string, 256> text;
    std::array<int, 512> byte_of_cp{};  // code points 0..511 cover the whole mapping
    Tables() {
        byte_of_cp.fill(-1);
        int shifted = 0;
        for (int b = 0; b < 256; ++b) {
            const uint32_t cp = stands_for_itself(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + shifted++);
            text[b] = utf8::encode(cp);
            byte_of_cp[cp] = b;
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

const std::string& byte_to_text(uint8_t byte) { return tables().text[byte]; }

std::optional<uint8_t> code_point_to_byte(uint32_t cp) {
    if (cp >= 512) return std::nullopt;
    const int b = tables().byte_of_cp[cp];
    if (b < 0) return std::nullopt;
    return static_cast<uint8_t>(b);
}

}  // namespace cria::vocab::byte_encoding
