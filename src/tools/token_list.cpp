#include "tools/token_list.h"

#include <charconv>

#include "cria/core/error.h"

namespace cria::tools {

std::vector<runtime::TokenId> parse_token_list(const std::string& text) {
    std::vector<runtime::TokenId> ids;
    size_t i = 0;
    const auto skip_spaces = [&] {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    };
    while (true) {
        skip_spaces();
        int32_t value = 0;
        const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
        if (ec != std::errc() || value < 0)
            throw Error("--tokens: expected a non-negative token id at offset " + std::to_string(i) + " of '" + text +
                        "'");
        ids.push_back(value);
        i = static_cast<size_t>(end - text.data());
        skip_spaces();
        if (i == text.size()) break;
        if (text[i] != ',') throw Error("--tokens: expected ',' at offset " + std::to_string(i));
        ++i;
    }
    return ids;
}

}  // namespace cria::tools
