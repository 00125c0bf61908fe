#include "cria/media/image_chunk.h"

#include "cria/vision/encoder.h"

namespace cria::media {

uint64_t image_hash(const vision::RgbImage& image) {
    uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
    const auto mix = [&h](uint8_t byte) {
        h ^= byte;
        h *= 1099511628211ull;  // FNV prime
    };
    // The size first: the same bytes as another shape are another image.
    for (int64_t v : {image.width, image.height})
        for (int shift = 0; shift < 64; shift += 8) mix(static_cast<uint8_t>(static_cast<uint64_t>(v) >> shift));
    for (uint8_t byte : image.pixels) mix(byte);
    return h;
}

bool projector_non_causal(vision::ProjectorType type) { return type == vision::ProjectorType::Gemma3; }

std::shared_ptr<const ImageChunk> encode_image_chunk(const vision::Mmproj& mmproj, const vision::RgbImage& image,
                                                     ops::Ops& ops, const vision::PreprocessOptions& options) {
    const auto pre = vision::preprocess_image(image, mmproj.hparams(), options);
    vision::ImageEmbeddings e = vision::encode_image(mmproj, pre.pixels, ops);
    auto chunk = std::make_shared<ImageChunk>();
    chunk->n_tokens = e.n_tokens;
    chunk->n_embd = e.n_embd;
    chunk->embd = std::move(e.values);
    chunk->nx = e.grid_x;
    chunk->ny = e.grid_y;
    chunk->non_causal = projector_non_causal(mmproj.hparams().projector);
    chunk->hash = image_hash(image);
    return chunk;
}

}  // namespace cria::media
