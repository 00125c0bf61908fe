// Target sizes: llama.cpp's fit-and-pad box, Qwen2-VL's smart resize and
// Muse-Glimmer's token grid, with the float32 / double steps llama.cpp uses
// (the sizes must match exactly, so the precision of each step matters).

#include <algorithm>
#include <cmath>

#include "cria/vision/preprocess.h"

namespace cria::vision {

FitBox fit_with_pad(int64_t sw, int64_t sh, int64_t tw, int64_t th) {
    const float scale = std::min(static_cast<float>(tw) / static_cast<float>(sw),
                                 static_cast<float>(th) / static_cast<float>(sh));
    FitBox b;
    b.width = std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(sw) * scale)), tw);
    b.height = std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(sh) * scale)), th);
    b.x = (tw - b.width) / 2;
    b.y = (th - b.height) / 2;
    return b;
}

Size2 smart_resize(int64_t width, int64_t height, int64_t align, int64_t min_pixels, int64_t max_pixels) {
    const auto a = static_cast<float>(align);
    auto round_a = [&](float v) { return static_cast<int64_t>(std::round(v / a)) * align; };
    auto ceil_a = [&](float v) { return static_cast<int64_t>(std::ceil(v / a)) * align; };
    auto floor_a = [&](float v) { return static_cast<int64_t>(std::floor(v / a)) * align; };
    const auto w = static_cast<float>(width), h = static_cast<float>(height);
    Size2 s{std::max(align, round_a(w)), std::max(align, round_a(h))};
    if (max_pixels > 0 && s.width * s.height > max_pixels) {
        const float beta = std::sqrt(h * w / static_cast<float>(max_pixels));
        s.height = std::max(align, floor_a(h / beta));
        s.width = std::max(align, floor_a(w / beta));
    } else if (min_pixels > 0 && s.width * s.height < min_pixels) {
        const float beta = std::sqrt(static_cast<float>(min_pixels) / (h * w));
        s.height = ceil_a(h * beta);
        s.width = ceil_a(w * beta);
    }
    return s;
}

Size2 muse_glimmer_target(int64_t width, int64_t height, int64_t cell, int64_t max_tokens) {
    double nph = static_cast<double>(height) / static_cast<double>(cell);
    double npw = static_cast<double>(width) / static_cast<double>(cell);
    if (nph * npw > static_cast<double>(max_tokens)) {
        const double ratio = nph > 0 ? npw / nph : 1.0;
        nph = std::sqrt(static_cast<double>(max_tokens) / ratio);
        npw = nph * ratio;
    }
    const double target_aspect = static_cast<double>(height) / static_cast<double>(width);
    int64_t best_a = 0, best_b = 0;
    double best_d = 0.0;
    for (double a_f : {std::floor(nph), std::ceil(nph)})
        for (double b_f : {std::floor(npw), std::ceil(npw)}) {
            const auto a = static_cast<int64_t>(a_f), b = static_cast<int64_t>(b_f);
            if (a < 1 || b < 1 || a * b > max_tokens) continue;
            const double d = std::abs(static_cast<double>(a) / static_cast<double>(b) - target_aspect);
            if (best_a == 0 || d < best_d || (d == best_d && a * b > best_a * best_b)) {
                best_a = a;
                best_b = b;
                best_d = d;
            }
        }
    if (best_a == 0) {
        best_a = std::max<int64_t>(1, std::lround(nph));
        best_b = std::max<int64_t>(1, std::lround(npw));
    }
    return {best_b * cell, best_a * cell};
}

}  // namespace cria::vision
