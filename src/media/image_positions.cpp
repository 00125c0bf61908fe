#include "cria/media/image_positions.h"

#include <algorithm>

namespace cria::media {

std::array<int32_t, 4> mrope_image_position(int32_t p0, int64_t i, int64_t nx) {
    // The extra section is an absolute 0, not p0 (llama.cpp writes it so).
    return {p0, p0 + static_cast<int32_t>(i / nx), p0 + static_cast<int32_t>(i % nx), 0};
}

int32_t image_position_count(const ImageChunk& image, bool mrope) {
    if (mrope) return static_cast<int32_t>(std::max(image.nx, image.ny));
    return static_cast<int32_t>(image.n_tokens);
}

}  // namespace cria::media
