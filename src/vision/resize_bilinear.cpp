// llama.cpp's bilinear resize: corner-aligned sampling (corner pixels map
// onto corner pixels), float32 lerps, truncation to uint8. No anti-aliasing.

#include <algorithm>

#include "cria/vision/preprocess.h"

namespace cria::vision {

RgbImage resize_bilinear(const RgbImage& src, int64_t width, int64_t height) {
    RgbImage out;
    out.width = width;
    out.height = height;
    out.pixels.resize(static_cast<size_t>(width * height * 3));
    const float xr = width > 1 ? static_cast<float>(src.width - 1) / static_cast<float>(width - 1) : 0.0f;
    const float yr = height > 1 ? static_cast<float>(src.height - 1) / static_cast<float>(height - 1) : 0.0f;
    for (int64_t y = 0; y < height; ++y) {
        const float py = static_cast<float>(y) * yr;
        const int64_t y0 = std::min<int64_t>(static_cast<int64_t>(py), src.height - 1);
        const int64_t y1 = std::min<int64_t>(y0 + 1, src.height - 1);
        const float yf = py - static_cast<float>(y0);
        for (int64_t x = 0; x < width; ++x) {
            const float px = static_cast<float>(x) * xr;
            const int64_t x0 = std::min<int64_t>(static_cast<int64_t>(px), src.width - 1);
            const int64_t x1 = std::min<int64_t>(x0 + 1, src.width - 1);
            const float xf = px - static_cast<float>(x0);
            for (int c = 0; c < 3; ++c) {
                const float p00 = src.at(x0, y0, c), p01 = src.at(x1, y0, c);
                const float p10 = src.at(x0, y1, c), p11 = src.at(x1, y1, c);
                const float top = p00 + (p01 - p00) * xf;
                const float bot = p10 + (p11 - p10) * xf;
                out.pixels[static_cast<size_t>((y * width + x) * 3 + c)] =
                    static_cast<uint8_t>(top + (bot - top) * yf);
            }
        }
    }
    return out;
}

}  // namespace cria::vision
