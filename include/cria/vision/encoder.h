#pragma once
// Image in, embeddings out: a preprocessed image through the projector's
// vision encoder and projector, one row per image token in the order the
// tokens enter the text model.

#include <cstdint>
#include <vector>

#include "cria/ops/ops.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"

namespace cria::vision {

struct ImageEmbeddings {
    int64_t n_tokens = 0;
    int64_t n_embd = 0;
    std::vector<float> values;  // values[t * n_embd + i]
    // The token grid as llama.cpp's clip_n_output_tokens_x/y report it
    // (merged grid for qwen2vl / muse-glimmer; (n_tokens, 1) for the others).
    int64_t grid_x = 0;
    int64_t grid_y = 0;
};

// Throws cria::Error when the image does not fit the projector (size not a
// whole number of patches, mlp input not square, ...).
ImageEmbeddings encode_image(const Mmproj& mmproj, const FloatImage& pixels, ops::Ops& ops);

}  // namespace cria::vision
