// Preprocessing geometry and resamplers on the worked numbers of the mmproj
// fixtures' README (they need no fixture files), and properties of each
// resampler that hold for any input.

#include <gtest/gtest.h>

#include <random>

#include "cria/core/error.h"
#include "cria/vision/preprocess.h"

namespace cria::vision {
namespace {

RgbImage random_image(int64_t w, int64_t h, uint32_t seed) {
    std::mt19937 rng(seed);
    RgbImage img{w, h, std::vector<uint8_t>(static_cast<size_t>(w * h * 3))};
    for (uint8_t& v : img.pixels) v = static_cast<uint8_t>(rng() & 0xFF);
    return img;
}

TEST(Preprocess, FitWithPadKeepsTheAspectAndCentres) {
    const FitBox a = fit_with_pad(96, 64, 112, 112);
    EXPECT_EQ(a.width, 112);
    EXPECT_EQ(a.height, 75);
    EXPECT_EQ(a.x, 0);
    EXPECT_EQ(a.y, 18);
    const FitBox b = fit_with_pad(50, 75, 112, 112);
    EXPECT_EQ(b.width, 75);
    EXPECT_EQ(b.height, 112);
    EXPECT_EQ(b.x, 18);
    EXPECT_EQ(b.y, 0);
}

TEST(Preprocess, SmartResizeTakesTheMinimumPixelBranch) {
    const Size2 a = smart_resize(96, 64, 28, 8 * 28 * 28, 4096 * 28 * 28);
    EXPECT_EQ(a.width, 112);
    EXPECT_EQ(a.height, 84);
    const Size2 b = smart_resize(50, 75, 28, 8 * 28 * 28, 4096 * 28 * 28);
    EXPECT_EQ(b.width, 84);
    EXPECT_EQ(b.height, 112);
    // The maximum branch: a large image shrinks under the cap, multiples of 28.
    const Size2 c = smart_resize(4000, 3000, 28, 8 * 28 * 28, 256 * 28 * 28);
    EXPECT_EQ(c.width % 28, 0);
    EXPECT_EQ(c.height % 28, 0);
    EXPECT_LE(c.width * c.height, 256 * 28 * 28);
}

TEST(Preprocess, MuseGlimmerGridFollowsTheAspect) {
    const Size2 a = muse_glimmer_target(96, 64, 28, 4096);
    EXPECT_EQ(a.width, 84);
    EXPECT_EQ(a.height, 56);
    const Size2 b = muse_glimmer_target(50, 75, 28, 4096);
    EXPECT_EQ(b.width, 56);
    EXPECT_EQ(b.height, 84);
    const Size2 c = muse_glimmer_target(10000, 10000, 28, 16);  // the cap
    EXPECT_EQ(c.width, 4 * 28);
    EXPECT_EQ(c.height, 4 * 28);
}

TEST(Preprocess, BilinearMapsCornersOntoCorners) {
    const RgbImage src = random_image(13, 7, 1);
    const RgbImage out = resize_bilinear(src, 29, 11);
    for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(out.at(0, 0, c), src.at(0, 0, c));
        EXPECT_EQ(out.at(28, 10, c), src.at(12, 6, c));
        EXPECT_EQ(out.at(28, 0, c), src.at(12, 0, c));
    }
}

TEST(Preprocess, ResamplersKeepAConstantImage) {
    RgbImage flat{9, 5, std::vector<uint8_t>(9 * 5 * 3, 77)};
    for (auto resize : {resize_bilinear, resize_bicubic, resize_lanczos})
        for (auto [w, h] : {std::pair{17, 3}, {4, 11}, {9, 5}}) {
            const RgbImage out = resize(flat, w, h);
            ASSERT_EQ(out.width, w);
            ASSERT_EQ(out.height, h);
            for (uint8_t v : out.pixels) EXPECT_EQ(v, 77);
        }
}

TEST(Preprocess, LetterboxPadsWithTheProjectorsColour) {
    VisionHparams h;
    h.projector = ProjectorType::Mlp;
    h.image_size = 28;
    h.patch_size = 14;
    h.image_mean = {0.5f, 0.5f, 0.5f};
    h.image_std = {0.5f, 0.5f, 0.5f};
    const PreprocessedImage p = preprocess_image(random_image(20, 10, 2), h);
    ASSERT_EQ(p.resized.width, 28);
    ASSERT_EQ(p.resized.height, 28);
    EXPECT_EQ(p.resized.at(0, 0, 0), 122);  // top padding rows
    EXPECT_EQ(p.resized.at(0, 0, 1), 116);
    EXPECT_EQ(p.resized.at(0, 0, 2), 104);
    EXPECT_FLOAT_EQ(p.pixels.values[0], (122.0f / 255.0f - 0.5f) / 0.5f);
    h.projector = ProjectorType::Gemma3;
    const PreprocessedImage g = preprocess_image(random_image(20, 10, 2), h);
    EXPECT_EQ(g.resized.at(0, 27, 0), 0);
}

TEST(Preprocess, RefusesAbsurdTokenLimits) {
    VisionHparams h;
    h.projector = ProjectorType::Qwen2vlMerger;
    h.image_size = 28;
    h.patch_size = 14;
    h.image_std = {1.0f, 1.0f, 1.0f};
    PreprocessOptions o;
    o.max_tokens = int64_t{1} << 40;
    EXPECT_THROW(preprocess_image(random_image(4, 4, 3), h, o), Error);
    o.max_tokens = -1;
    EXPECT_THROW(preprocess_image(random_image(4, 4, 3), h, o), Error);
}

}  // namespace
}  // namespace cria::vision
