#include "cria/media/image_encoder.h"

#include <algorithm>
#include <thread>

namespace cria::media {

namespace {
int threads_or_all(int n) { return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }
}  // namespace

ImageEncoder::ImageEncoder(const std::string& mmproj_path, int n_threads, const vision::ImageLimits& limits,
                           const vision::PreprocessOptions& options)
    : mmproj_(vision::Mmproj::open(mmproj_path)),
      limits_(limits),
      options_(options),
      pool_(threads_or_all(n_threads)),
      ops_(pool_) {}

std::shared_ptr<const ImageChunk> ImageEncoder::encode(std::span<const uint8_t> bytes, const std::string& name) {
    const vision::RgbImage image = vision::decode_image(bytes, name, limits_);
    std::lock_guard lock(mutex_);
    return encode_image_chunk(*mmproj_, image, ops_, options_);
}

}  // namespace cria::media
