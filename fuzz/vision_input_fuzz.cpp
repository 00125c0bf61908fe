// libFuzzer target: untrusted vision inputs must give a result or one
// cria::Error, never a crash, hang or sanitizer report. The first byte picks
// the input: an image (decoded, then preprocessed for each projector family
// with a small fixed geometry) or an mmproj GGUF (validated, then, when it
// loads, its encoder run on a blank image of a size its preprocessor makes).

#include <cstddef>
#include <cstdint>
#include <span>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/gguf/file.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"

namespace {

using namespace cria::vision;

void fuzz_image(std::span<const uint8_t> bytes) {
    ImageLimits limits;
    limits.max_side = 2048;
    limits.max_pixels = 1 << 20;
    const RgbImage img = decode_image(bytes, "fuzz", limits);
    VisionHparams h;
    h.image_size = 28;
    h.patch_size = 14;
    h.image_mean = {0.5f, 0.5f, 0.5f};
    h.image_std = {0.5f, 0.5f, 0.5f};
    PreprocessOptions small;
    small.max_tokens = 16;
    for (auto p : {ProjectorType::Gemma3, ProjectorType::Mlp, ProjectorType::Qwen2vlMerger, ProjectorType::MuseGlimmer}) {
        h.projector = p;
        (void)preprocess_image(img, h, small);
    }
}

void fuzz_mmproj(std::span<const uint8_t> bytes) {
    const auto file = cria::gguf::File::parse(bytes, "fuzz.gguf");
    const auto m = Mmproj::from_file(*file);
    const VisionHparams& h = m->hparams();
    // Keep the encoder run small: the fuzzer is after crashes, not numbers.
    if (h.image_size > 64 || h.n_embd > 64 || h.n_ff > 256 || h.n_layer > 4) return;
    RgbImage blank{h.image_size, h.image_size, std::vector<uint8_t>(static_cast<size_t>(h.image_size * h.image_size * 3), 128)};
    PreprocessOptions small;
    small.max_tokens = 16;
    const PreprocessedImage pre = preprocess_image(blank, h, small);
    cria::cpu::ThreadPool pool(1);
    cria::ops::CpuOps ops(pool);
    (void)encode_image(*m, pre.pixels, ops);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::span<const uint8_t> rest(data + 1, size - 1);
    try {
        if (data[0] & 1)
            fuzz_mmproj(rest);
        else
            fuzz_image(rest);
    } catch (const cria::Error&) {
    }
    return 0;
}
