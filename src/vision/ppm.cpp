// Binary PPM (P6) reading and writing: the fixtures store decoded and
// preprocessed images this way, and tests compare them byte for byte.

#include <cctype>
#include <string>

#include "cria/core/error.h"
#include "cria/vision/image.h"

namespace cria::vision {
namespace {

// Reads the next header number, skipping whitespace and '#' comments.
int64_t header_number(std::span<const uint8_t> b, size_t& pos, const std::string& name) {
    while (pos < b.size()) {
        if (b[pos] == '#') {
            while (pos < b.size() && b[pos] != '\n') ++pos;
        } else if (std::isspace(b[pos]) != 0) {
            ++pos;
        } else {
            break;
        }
    }
    int64_t v = 0;
    size_t digits = 0;
    while (pos < b.size() && std::isdigit(b[pos]) != 0 && digits < 9) {
        v = v * 10 + (b[pos++] - '0');
        ++digits;
    }
    if (digits == 0) throw Error("image " + name + ": malformed PPM header");
    return v;
}

}  // namespace

RgbImage read_ppm(std::span<const uint8_t> b, const std::string& name, const ImageLimits& limits) {
    if (b.size() < 2 || b[0] != 'P' || b[1] != '6') throw Error("image " + name + ": not a binary PPM (P6)");
    size_t pos = 2;
    const int64_t w = header_number(b, pos, name);
    const int64_t h = header_number(b, pos, name);
    const int64_t maxval = header_number(b, pos, name);
    if (maxval != 255) throw Error("image " + name + ": only 8-bit PPM (maxval 255) is supported");
    if (w < 1 || h < 1 || w > limits.max_side || h > limits.max_side || w * h > limits.max_pixels)
        throw Error("image " + name + ": PPM size " + std::to_string(w) + "x" + std::to_string(h) + " is out of limits");
    if (pos >= b.size() || std::isspace(b[pos]) == 0) throw Error("image " + name + ": malformed PPM header");
    ++pos;  // the single whitespace before the samples
    const auto n = static_cast<size_t>(w * h * 3);
    if (b.size() - pos < n) throw Error("image " + name + ": PPM data is truncated");
    RgbImage img;
    img.width = w;
    img.height = h;
    img.pixels.assign(b.begin() + static_cast<std::ptrdiff_t>(pos), b.begin() + static_cast<std::ptrdiff_t>(pos + n));
    return img;
}

std::vector<uint8_t> write_ppm(const RgbImage& image) {
    const std::string header =
        "P6\n" + std::to_string(image.width) + " " + std::to_string(image.height) + "\n255\n";
    std::vector<uint8_t> out(header.begin(), header.end());
    out.insert(out.end(), image.pixels.begin(), image.pixels.end());
    return out;
}

}  // namespace cria::vision
