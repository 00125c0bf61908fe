#include "data_url.h"

#include <string>

#include "api.h"

namespace cria::server {

std::optional<std::vector<uint8_t>> decode_base64(std::string_view text) {
    const auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    size_t n = text.size();
    // Up to two '=' at the very end, and only where a group is incomplete.
    size_t pad = 0;
    while (n > 0 && text[n - 1] == '=' && pad < 2) --n, ++pad;
    if (pad > 0 && (n + pad) % 4 != 0) return std::nullopt;
    if (n % 4 == 1) return std::nullopt;  // one character cannot carry a byte
    std::vector<uint8_t> out;
    out.reserve(n / 4 * 3 + 2);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; ++i) {
        const int v = value(text[i]);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>(acc >> bits));
            acc &= (1u << bits) - 1;
        }
    }
    return out;
}

namespace {

std::vector<uint8_t> checked_base64(std::string_view data, const char* where) {
    if (data.empty()) throw bad_request(std::string(where) + ": the image data is empty");
    auto bytes = decode_base64(data);
    if (!bytes) throw bad_request(std::string(where) + ": the image data is not valid base64");
    return std::move(*bytes);
}

}  // namespace

std::vector<uint8_t> image_from_data_url(std::string_view url) {
    constexpr std::string_view scheme = "data:";
    if (url.substr(0, scheme.size()) != scheme) {
        if (url.substr(0, 7) == "http://" || url.substr(0, 8) == "https://")
            throw bad_request("image_url: remote images are not fetched; send the image inline as a data: URL");
        throw bad_request("image_url: the URL must be a data: URL (data:image/...;base64,...)");
    }
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos) throw bad_request("image_url: a data: URL needs a ',' before its data");
    const std::string_view header = url.substr(scheme.size(), comma - scheme.size());
    if (header.substr(0, 6) != "image/") throw bad_request("image_url: the data: URL is not an image (image/...)");
    if (header.size() < 7 || header.substr(header.size() - 7) != ";base64")
        throw bad_request("image_url: the data: URL must be base64 (;base64,)");
    return checked_base64(url.substr(comma + 1), "image_url");
}

std::vector<uint8_t> image_from_base64(std::string_view media_type, std::string_view data) {
    if (media_type.substr(0, 6) != "image/") throw bad_request("image: 'media_type' must be image/...");
    return checked_base64(data, "image");
}

}  // namespace cria::server
