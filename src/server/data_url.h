#pragma once
// Images arrive inline: an OpenAI image_url part's `data:` URL or an
// Anthropic image block's base64 source. The server fetches nothing, so a
// remote URL is refused; the bytes are decoded strictly (any character
// outside the base64 alphabet, or bad padding, is an error).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace cria::server {

// The bytes of standard base64 (padding optional); nullopt when malformed.
std::optional<std::vector<uint8_t>> decode_base64(std::string_view text);

// The bytes of "data:image/<type>;base64,<data>". Throws a 400 ApiError
// for a remote URL, another media type, or a malformed URL.
std::vector<uint8_t> image_from_data_url(std::string_view url);

// The bytes of an Anthropic base64 image source (media_type image/*).
std::vector<uint8_t> image_from_base64(std::string_view media_type, std::string_view data);

}  // namespace cria::server
