// im2col for the patch embedding: the convolution becomes one matrix product
// (the op API's matmul) of the kernel with these columns.

#include "cria/core/error.h"
#include "cria/vision/kernels.h"

namespace cria::vision {

std::vector<float> image_patch_columns(std::span<const float> image, int64_t width, int64_t height, int64_t patch) {
    if (patch < 1 || width < patch || height < patch || static_cast<int64_t>(image.size()) != width * height * 3)
        throw Error("image_patch_columns: image " + std::to_string(width) + "x" + std::to_string(height) +
                    " does not hold one patch of " + std::to_string(patch));
    const int64_t gw = width / patch, gh = height / patch, k = patch * patch * 3;
    std::vector<float> cols(static_cast<size_t>(gw * gh * k));
    for (int64_t py = 0; py < gh; ++py)
        for (int64_t px = 0; px < gw; ++px) {
            float* col = cols.data() + (py * gw + px) * k;
            for (int c = 0; c < 3; ++c)
                for (int64_t ky = 0; ky < patch; ++ky) {
                    const float* src = image.data() + ((py * patch + ky) * width + px * patch) * 3 + c;
                    float* dst = col + patch * (ky + patch * c);
                    for (int64_t kx = 0; kx < patch; ++kx) dst[kx] = src[kx * 3];
                }
        }
    return cols;
}

}  // namespace cria::vision
