#pragma once
// From a decoded image to the float image a projector's encoder reads,
// exactly as llama.cpp build 10470 prepares it (target size per projector,
// its resampler, letterbox padding, normalisation with the file's mean/std).
// The float32 recipes are followed operation by operation so the 8-bit
// image comes out bit-identical to llama.cpp's.

#include <cstdint>

#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"

namespace cria::vision {

// Float image, row-major, channels interleaved: values[(y * width + x) * 3 + c].
struct FloatImage {
    int64_t width = 0;
    int64_t height = 0;
    std::vector<float> values;
};

struct PreprocessOptions {
    // Token limits of the dynamic-size projectors (llama.cpp's
    // --image-min-tokens / --image-max-tokens); 0 keeps the defaults
    // (qwen2vl 8 / 4096, muse-glimmer max 4096).
    int64_t min_tokens = 0;
    int64_t max_tokens = 0;
};

struct PreprocessedImage {
    RgbImage resized;  // the 8-bit image before normalisation (llama.cpp's preproc.ppm)
    FloatImage pixels; // normalised, what the encoder reads
};

PreprocessedImage preprocess_image(const RgbImage& image, const VisionHparams& hparams,
                                   const PreprocessOptions& options = {});

// (u / 255 - mean[c]) / std[c] in float32, in that order.
FloatImage normalise_image(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std);

// --- The building blocks (exposed for their tests) ---------------------------

// Aspect-preserving fit of (sw, sh) into (tw, th), size rounded up ("PAD_CEIL"),
// centred with integer-division offsets.
struct FitBox {
    int64_t width = 0, height = 0, x = 0, y = 0;
};
FitBox fit_with_pad(int64_t sw, int64_t sh, int64_t tw, int64_t th);

// Qwen2-VL's smart resize: multiples of `align` between the pixel limits.
struct Size2 {
    int64_t width = 0, height = 0;
};
Size2 smart_resize(int64_t width, int64_t height, int64_t align, int64_t min_pixels, int64_t max_pixels);
// Muse-Glimmer's grid: the token grid closest to the image's aspect under the cap.
Size2 muse_glimmer_target(int64_t width, int64_t height, int64_t cell, int64_t max_tokens);

// The resamplers, each llama.cpp's (or Pillow's, for Lanczos) exactly.
RgbImage resize_bilinear(const RgbImage& src, int64_t width, int64_t height);
RgbImage resize_bicubic(const RgbImage& src, int64_t width, int64_t height);
RgbImage resize_lanczos(const RgbImage& src, int64_t width, int64_t height);

}  // namespace cria::vision
