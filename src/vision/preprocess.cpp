// Per projector: the target size, the resampler and the padding llama.cpp
// build 10470 uses (see the mmproj fixtures' README, section 4), then the
// normalisation with the file's mean and std.

#include "cria/vision/preprocess.h"

#include "cria/core/error.h"

namespace cria::vision {
namespace {

using Resampler = RgbImage (*)(const RgbImage&, int64_t, int64_t);

// Fit-and-pad: keep the aspect, resize into the box, centre on a canvas of
// the pad colour. A source already at the target size is copied as it is.
RgbImage letterbox(const RgbImage& src, int64_t tw, int64_t th, Resampler resample, std::array<uint8_t, 3> pad) {
    if (src.width == tw && src.height == th) return src;
    const FitBox box = fit_with_pad(src.width, src.height, tw, th);
    const RgbImage inner = resample(src, box.width, box.height);
    RgbImage out{tw, th, std::vector<uint8_t>(static_cast<size_t>(tw * th * 3))};
    for (int64_t i = 0; i < tw * th; ++i)
        for (int c = 0; c < 3; ++c) out.pixels[static_cast<size_t>(i * 3 + c)] = pad[static_cast<size_t>(c)];
    for (int64_t y = 0; y < box.height; ++y)
        for (int64_t x = 0; x < box.width; ++x)
            for (int c = 0; c < 3; ++c)
                out.pixels[static_cast<size_t>(((y + box.y) * tw + x + box.x) * 3 + c)] = inner.at(x, y, c);
    return out;
}

}  // namespace

FloatImage normalise_image(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std) {
    FloatImage f{image.width, image.height, std::vector<float>(image.pixels.size())};
    for (size_t i = 0; i < image.pixels.size(); ++i) {
        const size_t c = i % 3;
        f.values[i] = (static_cast<float>(image.pixels[i]) / 255.0f - mean[c]) / std[c];
    }
    return f;
}

PreprocessedImage preprocess_image(const RgbImage& image, const VisionHparams& h, const PreprocessOptions& options) {
    if (image.width < 1 || image.height < 1) throw Error("preprocess: empty image");
    // Beyond this a token limit only serves to make the canvas exhaust memory.
    constexpr int64_t kMaxTokenLimit = 1 << 16;
    if (options.min_tokens < 0 || options.max_tokens < 0 || options.min_tokens > kMaxTokenLimit ||
        options.max_tokens > kMaxTokenLimit)
        throw Error("preprocess: image token limits must be between 0 and " + std::to_string(kMaxTokenLimit));
    PreprocessedImage out;
    switch (h.projector) {
        case ProjectorType::Gemma3:
            out.resized = letterbox(image, h.image_size, h.image_size, resize_bilinear, {0, 0, 0});
            break;
        case ProjectorType::Mlp:
            // Grey close to 255 * CLIP's mean, as llama.cpp pads.
            out.resized = letterbox(image, h.image_size, h.image_size, resize_bicubic, {122, 116, 104});
            break;
        case ProjectorType::Qwen2vlMerger: {
            const int64_t align = h.patch_size * 2;
            const int64_t min_tokens = options.min_tokens > 0 ? options.min_tokens : 8;
            const int64_t max_tokens = options.max_tokens > 0 ? options.max_tokens : 4096;
            const Size2 t = smart_resize(image.width, image.height, align, min_tokens * align * align,
                                         max_tokens * align * align);
            out.resized = letterbox(image, t.width, t.height, resize_bilinear, {0, 0, 0});
            break;
        }
        case ProjectorType::MuseGlimmer: {
            const int64_t max_tokens = options.max_tokens > 0 ? options.max_tokens : 4096;
            const Size2 t = muse_glimmer_target(image.width, image.height, h.patch_size * h.spatial_merge, max_tokens);
            out.resized = (t.width == image.width && t.height == image.height)
                              ? image
                              : resize_lanczos(image, t.width, t.height);
            break;
        }
    }
    out.pixels = normalise_image(out.resized, h.image_mean, h.image_std);
    return out;
}

}  // namespace cria::vision
