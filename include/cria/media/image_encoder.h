#pragma once
// A vision projector ready to turn untrusted image bytes into image chunks:
// the mmproj file, its own thread pool, and the limits every image must
// pass before a pixel is allocated. Thread-safe (one encode at a time).

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "cria/cpu/thread_pool.h"
#include "cria/media/image_chunk.h"
#include "cria/media/media_prompt.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"

namespace cria::media {

class ImageEncoder {
public:
    // Opens the projector; n_threads <= 0: one per hardware thread. Throws
    // cria::Error for a bad file.
    ImageEncoder(const std::string& mmproj_path, int n_threads, const vision::ImageLimits& limits = {},
                 const vision::PreprocessOptions& options = {});

    const vision::Mmproj& mmproj() const { return *mmproj_; }
    int64_t n_output() const { return mmproj_->hparams().n_output; }
    ImageDelimiters delimiters() const { return image_delimiters(mmproj_->hparams().projector); }

    // Decodes (JPEG, PNG, BMP, GIF, ...) and encodes. Throws cria::Error for
    // anything that is not an image within the limits; `name` is for messages.
    std::shared_ptr<const ImageChunk> encode(std::span<const uint8_t> bytes, const std::string& name);

private:
    std::unique_ptr<vision::Mmproj> mmproj_;
    vision::ImageLimits limits_;
    vision::PreprocessOptions options_;
    std::mutex mutex_;
    cpu::ThreadPool pool_;
    ops::CpuOps ops_;
};

}  // namespace cria::media
