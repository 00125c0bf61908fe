// Untrusted inputs with random damage: byte flips in a valid mmproj file and
// in a valid image give a result or a cria::Error, never a crash. A
// deterministic stand-in for a fuzzer (seeded, a few hundred cases, fast).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/gguf/file.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"
#include "vision/synthetic_mmproj.h"

namespace cria::vision {
namespace {

std::vector<uint8_t> file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void damage(std::vector<uint8_t>& b, std::mt19937& rng, size_t limit) {
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
        // Mostly the header, metadata and tensor table, where the checks are.
        const size_t at = rng() % std::min(b.size(), limit);
        b[at] = static_cast<uint8_t>(rng());
    }
}

TEST(VisionMutation, DamagedMmprojFilesLoadOrGiveAnError) {
    cpu::ThreadPool pool(1);
    ops::CpuOps ops(pool);
    std::mt19937 rng(42);
    size_t loaded = 0, refused = 0;
    for (auto make : {test::small_gemma3_mmproj, test::small_mlp_mmproj, test::small_qwen2vl_mmproj,
                      test::small_muse_glimmer_mmproj}) {
        const auto good = file_bytes(test::write_mmproj(make(), "mutation-source.gguf"));
        for (int iter = 0; iter < 150; ++iter) {
            auto bytes = good;
            damage(bytes, rng, 4096);
            try {
                const auto file = gguf::File::parse(bytes, "damaged.gguf");
                const auto m = Mmproj::from_file(*file);
                const VisionHparams& h = m->hparams();
                if (h.image_size <= 64 && h.n_embd <= 64 && h.n_ff <= 256 && h.n_layer <= 4) {
                    RgbImage blank{h.image_size, h.image_size,
                                   std::vector<uint8_t>(static_cast<size_t>(h.image_size * h.image_size * 3), 128)};
                    PreprocessOptions small;
                    small.max_tokens = 16;
                    const auto pre = preprocess_image(blank, h, small);
                    (void)encode_image(*m, pre.pixels, ops);
                }
                ++loaded;
            } catch (const Error&) {
                ++refused;
            }
        }
    }
    // Both outcomes happen: the damage reaches the checks and sometimes
    // only the weights (which load and run).
    EXPECT_GT(loaded, 0u);
    EXPECT_GT(refused, 0u);
}

TEST(VisionMutation, DamagedImagesDecodeOrGiveAnError) {
    // A valid 7x5 24-bit BMP, then damaged.
    const int w = 7, h = 5;
    const uint32_t row = (w * 3 + 3) & ~3u, data = row * h;
    std::vector<uint8_t> good(54 + data, 0x55);
    auto put32 = [&](size_t at, uint32_t v) { std::memcpy(good.data() + at, &v, 4); };
    std::memset(good.data(), 0, 54);
    good[0] = 'B';
    good[1] = 'M';
    put32(2, static_cast<uint32_t>(good.size()));
    put32(10, 54);
    put32(14, 40);
    put32(18, w);
    put32(22, h);
    good[26] = 1;
    good[28] = 24;
    put32(34, data);
    ASSERT_EQ(decode_image(good, "good.bmp").width, w);
    std::mt19937 rng(7);
    ImageLimits limits;
    limits.max_side = 4096;
    limits.max_pixels = 1 << 20;
    for (int iter = 0; iter < 300; ++iter) {
        auto bytes = good;
        damage(bytes, rng, 54);
        try {
            const RgbImage img = decode_image(bytes, "damaged.bmp", limits);
            EXPECT_EQ(img.pixels.size(), static_cast<size_t>(img.width * img.height * 3));
        } catch (const Error&) {
        }
    }
}

}  // namespace
}  // namespace cria::vision
