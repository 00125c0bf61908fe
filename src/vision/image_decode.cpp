// Image decoding through Debian's stb_image (libstb-dev), the decoder
// llama.cpp uses, so JPEG pixels agree with its reference. The format is
// sniffed and the size read from the header first: nothing unknown reaches
// the decoder, and no allocation follows an unchecked size.

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "cria/core/error.h"
#include "cria/vision/image.h"
#include "stb_image.h"

namespace cria::vision {
namespace {

// A file larger than this is refused before reading (the largest allowed
// image as uncompressed BMP, with room to spare).
constexpr int64_t kMaxFileBytes = int64_t{512} << 20;

bool starts_with(std::span<const uint8_t> b, const char* magic, size_t n, size_t at = 0) {
    return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

void check_size(int64_t w, int64_t h, const std::string& name, const ImageLimits& limits) {
    if (w < 1 || h < 1) throw Error("image " + name + ": empty image (" + std::to_string(w) + "x" + std::to_string(h) + ")");
    if (w > limits.max_side || h > limits.max_side)
        throw Error("image " + name + ": " + std::to_string(w) + "x" + std::to_string(h) + " exceeds the side limit of " +
                    std::to_string(limits.max_side) + " pixels");
    if (w * h > limits.max_pixels)
        throw Error("image " + name + ": " + std::to_string(w) + "x" + std::to_string(h) +
                    " exceeds the limit of " + std::to_string(limits.max_pixels) + " pixels");
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> b) {
    if (starts_with(b, "\xFF\xD8\xFF", 3)) return ImageFormat::Jpeg;
    if (starts_with(b, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::Png;
    if (starts_with(b, "BM", 2)) return ImageFormat::Bmp;
    if (starts_with(b, "GIF87a", 6) || starts_with(b, "GIF89a", 6)) return ImageFormat::Gif;
    if (starts_with(b, "RIFF", 4) && starts_with(b, "WEBP", 4, 8)) return ImageFormat::Webp;
    return ImageFormat::Unknown;
}

RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits) {
    const ImageFormat format = sniff_image_format(bytes);
    if (format == ImageFormat::Unknown)
        throw Error("image " + name + ": not a JPEG, PNG, BMP or GIF file");
    if (format == ImageFormat::Webp)
        throw Error("image " + name + ": WebP is not supported by this build (no WebP decoder); convert it to PNG");
    if (bytes.size() > static_cast<size_t>(INT_MAX)) throw Error("image " + name + ": file too large");
    const int len = static_cast<int>(bytes.size());
    int w = 0, h = 0, channels = 0;
    if (stbi_info_from_memory(bytes.data(), len, &w, &h, &channels) == 0)
        throw Error("image " + name + ": cannot read the header (" + std::string(stbi_failure_reason()) + ")");
    check_size(w, h, name, limits);
    std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load_from_memory(bytes.data(), len, &w, &h, &channels, 3),
                                                   stbi_image_free);
    if (!data) throw Error("image " + name + ": cannot decode (" + std::string(stbi_failure_reason()) + ")");
    check_size(w, h, name, limits);  // the decoder's size must be the header's
    RgbImage img;
    img.width = w;
    img.height = h;
    img.pixels.assign(data.get(), data.get() + static_cast<size_t>(w) * h * 3);
    return img;
}

RgbImage load_image_file(const std::string& path, const ImageLimits& limits) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw Error("image " + path + ": cannot open the file");
    const std::streamoff size = in.tellg();
    if (size < 0 || size > kMaxFileBytes) throw Error("image " + path + ": file too large");
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) throw Error("image " + path + ": cannot read the file");
    if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] == '6') return read_ppm(bytes, path, limits);
    return decode_image(bytes, path, limits);
}

}  // namespace cria::vision
