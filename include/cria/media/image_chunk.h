#pragma once
// One image as the text model receives it: its embeddings (one row per image
// token), the token grid, how the decoder attends over it, and a hash of the
// decoded pixels that tells two images apart in a saved or reused cache.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cria/ops/ops.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"

namespace cria::media {

struct ImageChunk {
    int64_t n_tokens = 0;
    int64_t n_embd = 0;
    std::vector<float> embd;  // embd[t * n_embd + i], tokens in the order they enter the model
    // The token grid (llama.cpp's nx, ny): the merged grid for qwen2vl and
    // muse-glimmer, (n_tokens, 1) for the others.
    int64_t nx = 0;
    int64_t ny = 0;
    // gemma3's image tokens attend to each other both ways (mtmd's
    // mtmd_decode_use_non_causal).
    bool non_causal = false;
    // FNV-1a over the decoded RGB bytes and the size: equal images, equal hash.
    uint64_t hash = 0;
};

// FNV-1a (64 bit) of a decoded image's size and pixels.
uint64_t image_hash(const vision::RgbImage& image);

// Whether the decoder attends over this projector's image tokens both ways.
bool projector_non_causal(vision::ProjectorType type);

// Preprocesses and encodes one decoded image. Throws cria::Error when the
// image does not fit the projector.
std::shared_ptr<const ImageChunk> encode_image_chunk(const vision::Mmproj& mmproj, const vision::RgbImage& image,
                                                     ops::Ops& ops, const vision::PreprocessOptions& options = {});

}  // namespace cria::media
