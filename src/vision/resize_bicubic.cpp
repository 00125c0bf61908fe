// llama.cpp's own bicubic resize (not Pillow's): top-left aligned sampling,
// a cubic through 4 neighbours per axis with coefficients computed in double
// and stored as float, then round half away from zero and clamp.

#include <algorithm>
#include <cmath>

#include "cria/vision/preprocess.h"

namespace cria::vision {
namespace {

// a0 + a1 d + a2 d^2 + a3 d^3 through (-1: v0, 0: v1, 1: v2, 2: v3), float32,
// evaluated left to right as llama.cpp writes it.
float cubic(float v0, float v1, float v2, float v3, float d) {
    const float d0 = v0 - v1, d2 = v2 - v1, d3 = v3 - v1;
    const float a0 = v1;
    const auto a1 = static_cast<float>(-1.0 / 3 * d0 + d2 - 1.0 / 6 * d3);
    const auto a2 = static_cast<float>(1.0 / 2 * d0 + 1.0 / 2 * d2);
    const auto a3 = static_cast<float>(-1.0 / 6 * d0 - 1.0 / 2 * d2 + 1.0 / 6 * d3);
    return a0 + a1 * d + a2 * d * d + a3 * d * d * d;
}

}  // namespace

RgbImage resize_bicubic(const RgbImage& src, int64_t width, int64_t height) {
    RgbImage out;
    out.width = width;
    out.height = height;
    out.pixels.resize(static_cast<size_t>(width * height * 3));
    const float tx = static_cast<float>(src.width) / static_cast<float>(width);
    const float ty = static_cast<float>(src.height) / static_cast<float>(height);
    auto clampi = [](int64_t v, int64_t hi) { return std::clamp<int64_t>(v, 0, hi); };
    for (int64_t i = 0; i < height; ++i) {
        const float fy = ty * static_cast<float>(i);
        const auto y = static_cast<int64_t>(fy);
        const float dy = fy - static_cast<float>(y);
        for (int64_t j = 0; j < width; ++j) {
            const float fx = tx * static_cast<float>(j);
            const auto x = static_cast<int64_t>(fx);
            const float dx = fx - static_cast<float>(x);
            for (int c = 0; c < 3; ++c) {
                float col[4];
                for (int jj = 0; jj < 4; ++jj) {
                    const int64_t r = clampi(y - 1 + jj, src.height - 1);
                    auto p = [&](int64_t xx) { return static_cast<float>(src.at(clampi(xx, src.width - 1), r, c)); };
                    col[jj] = cubic(p(x - 1), p(x), p(x + 1), p(x + 2), dx);
                }
                const float v = cubic(col[0], col[1], col[2], col[3], dy);
                out.pixels[static_cast<size_t>((i * width + j) * 3 + c)] =
                    static_cast<uint8_t>(std::clamp(std::round(v), 0.0f, 255.0f));
            }
        }
    }
    return out;
}

}  // namespace cria::vision
