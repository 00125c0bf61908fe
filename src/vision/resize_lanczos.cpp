// Pillow's Lanczos-3 resample (ImagingResample), which Muse-Glimmer's
// preprocessing reproduces: separable, horizontal pass first, each pass only
// when that side changes; weights in double, then 22-bit fixed point; the
// intermediate image is clamped uint8. Integer arithmetic, so bit-exact.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "cria/vision/preprocess.h"

namespace cria::vision {
namespace {

constexpr int kPrecision = 22;

double sinc(double x) {
    if (x == 0.0) return 1.0;
    const double px = x * std::numbers::pi;
    return std::sin(px) / px;
}

double lanczos3(double x) { return (x >= -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

struct Taps {
    int64_t first = 0;
    std::vector<int32_t> weights;
};

std::vector<Taps> fixed_point_taps(int64_t in, int64_t out) {
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    const double fs = std::max(scale, 1.0);
    const double support = 3.0 * fs;
    std::vector<Taps> taps(static_cast<size_t>(out));
    for (int64_t xx = 0; xx < out; ++xx) {
        const double center = (static_cast<double>(xx) + 0.5) * scale;
        const auto xmin = std::max<int64_t>(0, static_cast<int64_t>(center - support + 0.5));
        const int64_t n = std::min<int64_t>(in, static_cast<int64_t>(center + support + 0.5)) - xmin;
        std::vector<double> w(static_cast<size_t>(std::max<int64_t>(n, 0)));
        double total = 0.0;
        for (int64_t k = 0; k < n; ++k) {
            w[static_cast<size_t>(k)] = lanczos3((static_cast<double>(k + xmin) - center + 0.5) / fs);
            total += w[static_cast<size_t>(k)];
        }
        Taps& t = taps[static_cast<size_t>(xx)];
        t.first = xmin;
        for (double v : w) {
            if (total != 0.0) v /= total;
            t.weights.push_back(static_cast<int32_t>(v * (1 << kPrecision) + (v < 0 ? -0.5 : 0.5)));
        }
    }
    return taps;
}

uint8_t clip8(int64_t acc) { return static_cast<uint8_t>(std::clamp<int64_t>(acc >> kPrecision, 0, 255)); }

RgbImage horizontal(const RgbImage& src, int64_t width) {
    RgbImage out{width, src.height, std::vector<uint8_t>(static_cast<size_t>(width * src.height * 3))};
    const auto taps = fixed_point_taps(src.width, width);
    for (int64_t y = 0; y < src.height; ++y)
        for (int64_t x = 0; x < width; ++x) {
            const Taps& t = taps[static_cast<size_t>(x)];
            for (int c = 0; c < 3; ++c) {
                int64_t acc = int64_t{1} << (kPrecision - 1);
                for (size_t k = 0; k < t.weights.size(); ++k)
                    acc += int64_t{src.at(t.first + static_cast<int64_t>(k), y, c)} * t.weights[k];
                out.pixels[static_cast<size_t>((y * width + x) * 3 + c)] = clip8(acc);
            }
        }
    return out;
}

RgbImage vertical(const RgbImage& src, int64_t height) {
    RgbImage out{src.width, height, std::vector<uint8_t>(static_cast<size_t>(src.width * height * 3))};
    const auto taps = fixed_point_taps(src.height, height);
    for (int64_t y = 0; y < height; ++y) {
        const Taps& t = taps[static_cast<size_t>(y)];
        for (int64_t x = 0; x < src.width; ++x)
            for (int c = 0; c < 3; ++c) {
                int64_t acc = int64_t{1} << (kPrecision - 1);
                for (size_t k = 0; k < t.weights.size(); ++k)
                    acc += int64_t{src.at(x, t.first + static_cast<int64_t>(k), c)} * t.weights[k];
                out.pixels[static_cast<size_t>((y * src.width + x) * 3 + c)] = clip8(acc);
            }
    }
    return out;
}

}  // namespace

RgbImage resize_lanczos(const RgbImage& src, int64_t width, int64_t height) {
    RgbImage img = src;
    if (width != img.width) img = horizontal(img, width);
    if (height != img.height) img = vertical(img, height);
    return img;
}

}  // namespace cria::vision
