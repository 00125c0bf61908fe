#include "vision/fixture_files.h"

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace cria::test {

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<double> json_numbers(const std::string& text, const std::string& key) {
    std::vector<double> out;
    size_t pos = text.find("\"" + key + "\":");
    if (pos == std::string::npos) return out;
    pos = text.find('[', pos);
    int depth = 0;
    while (pos < text.size()) {
        const char ch = text[pos];
        if (ch == '[') {
            ++depth;
            ++pos;
        } else if (ch == ']') {
            ++pos;
            if (--depth == 0) break;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            char* end = nullptr;
            out.push_back(std::strtod(text.c_str() + pos, &end));
            pos = static_cast<size_t>(end - text.c_str());
        } else {
            ++pos;
        }
    }
    return out;
}

int64_t json_int(const std::string& text, const std::string& key) {
    const size_t pos = text.find("\"" + key + "\":");
    if (pos == std::string::npos) return -1;
    return std::strtoll(text.c_str() + pos + key.size() + 3, nullptr, 10);
}

}  // namespace cria::test
