#pragma once
// Decoded images: 8-bit RGB, row-major, channels interleaved, and the one
// decoder for untrusted bytes (JPEG, PNG, BMP, GIF first frame), the way
// llama.cpp decodes them (stb_image, 3 channels: alpha dropped, grey
// replicated, EXIF orientation ignored).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cria::vision {

struct RgbImage {
    int64_t width = 0;
    int64_t height = 0;
    std::vector<uint8_t> pixels;  // (y * width + x) * 3 + channel, RGB

    uint8_t at(int64_t x, int64_t y, int c) const { return pixels[static_cast<size_t>((y * width + x) * 3 + c)]; }
};

// Refused before any pixel memory is allocated (the header gives the size).
struct ImageLimits {
    int64_t max_side = 16384;
    int64_t max_pixels = 50'000'000;
};

// Which container the bytes start with; Unknown for anything else.
enum class ImageFormat { Unknown, Jpeg, Png, Bmp, Gif, Webp };
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

// Decodes `bytes`; `name` is used in error messages. Throws cria::Error for
// an unknown or unsupported format (WebP: no decoder in this build), a size
// over the limits, or a corrupt file.
RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits = {});
RgbImage load_image_file(const std::string& path, const ImageLimits& limits = {});

// Binary PPM (P6, maxval 255): the fixtures' format for exact pixel checks.
RgbImage read_ppm(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits = {});
std::vector<uint8_t> write_ppm(const RgbImage& image);

}  // namespace cria::vision
