#pragma once
// Where an image's tokens sit in the decoder, as llama.cpp's mtmd lays them
// out. Sequential (most models): token i at p0 + i, the image takes n_tokens
// positions. M-RoPE (qwen2vl-style text models): every token shares the
// temporal position p0 with (height, width) sections p0 + row and p0 + col
// of the token grid and an extra section of 0, and the image takes
// max(nx, ny) positions.

#include <array>
#include <cstdint>

#include "cria/media/image_chunk.h"

namespace cria::media {

// The four M-RoPE sections (temporal, height, width, extra) of image token i.
std::array<int32_t, 4> mrope_image_position(int32_t p0, int64_t i, int64_t nx);

// Positions the image takes: the next token after it sits at p0 + this.
int32_t image_position_count(const ImageChunk& image, bool mrope);

}  // namespace cria::media
