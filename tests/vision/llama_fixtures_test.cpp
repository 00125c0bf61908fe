// cria against llama.cpp build 10470 on the mmproj fixtures
// (../shared/testdata/mmproj-fixtures, or $CRIA_MMPROJ_FIXTURES): decoding,
// the preprocessed 8-bit and float images (bit-exact), the token grid, and
// the embeddings (NMSE <= 1e-4 against the reference run and the
// flash-attention run). Skips, saying so, when the fixtures are absent.

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"
#include "cria/vision/reference_encoder.h"
#include "support/test_paths.h"
#include "vision/fixture_files.h"

namespace cria::vision {
namespace {

struct Case {
    const char* file;  // mmproj-<file>.gguf, out/<file>__<image>.*
    const char* image;
};

class MmprojFixture : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        dir_ = test::mmproj_fixtures_dir();
        if (dir_.empty()) GTEST_SKIP() << "mmproj fixtures not found (set CRIA_MMPROJ_FIXTURES or provide ../shared)";
    }
    std::string out(const std::string& suffix) const {
        const auto bytes = test::read_bytes(dir_ / "out" / (std::string(GetParam().file) + "__" + GetParam().image + suffix));
        return {bytes.begin(), bytes.end()};
    }
    RgbImage decoded() const {
        const auto path = dir_ / (std::string(GetParam().image) + ".decoded.ppm");
        return read_ppm(test::read_bytes(path), path.string());
    }
    std::filesystem::path dir_;
};

double nmse(const std::vector<float>& got, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return num / den;
}

TEST_P(MmprojFixture, PreprocessedImageIsBitExact) {
    const auto m = Mmproj::open((dir_ / ("mmproj-" + std::string(GetParam().file) + ".gguf")).string());
    const PreprocessedImage pre = preprocess_image(decoded(), m->hparams());
    const auto ref_bytes = test::read_bytes(dir_ / "out" / (std::string(GetParam().file) + "__" + GetParam().image + ".preproc.ppm"));
    const RgbImage ref = read_ppm(ref_bytes, "preproc.ppm");
    ASSERT_EQ(pre.resized.width, ref.width);
    ASSERT_EQ(pre.resized.height, ref.height);
    size_t differ = 0;
    for (size_t i = 0; i < ref.pixels.size(); ++i) differ += pre.resized.pixels[i] != ref.pixels[i];
    EXPECT_EQ(differ, 0u) << "8-bit values differing from llama.cpp's";

    const std::string pixels = out(".pixels.json");
    EXPECT_EQ(test::json_int(pixels, "width"), pre.pixels.width);
    EXPECT_EQ(test::json_int(pixels, "height"), pre.pixels.height);
    const auto values = test::json_numbers(pixels, "values");
    ASSERT_EQ(values.size(), pre.pixels.values.size());
    size_t float_differ = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        const auto want = static_cast<float>(values[i]);
        float_differ += std::memcmp(&want, &pre.pixels.values[i], sizeof(float)) != 0;
    }
    EXPECT_EQ(float_differ, 0u) << "normalised floats differing bit-wise from llama.cpp's";
}

TEST_P(MmprojFixture, EmbeddingsMatchLlamaCpp) {
    const auto m = Mmproj::open((dir_ / ("mmproj-" + std::string(GetParam().file) + ".gguf")).string());
    // Start from llama.cpp's own float image, so this checks the encoder alone.
    const std::string pixels = out(".pixels.json");
    FloatImage px;
    px.width = test::json_int(pixels, "width");
    px.height = test::json_int(pixels, "height");
    for (double v : test::json_numbers(pixels, "values")) px.values.push_back(static_cast<float>(v));
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    const ImageEmbeddings e = encode_image(*m, px, ops);

    const std::string meta = out(".meta.json");
    EXPECT_EQ(e.grid_x, test::json_int(meta, "token_grid_x"));
    EXPECT_EQ(e.grid_y, test::json_int(meta, "token_grid_y"));
    for (const char* suffix : {".embd.json", ".embd-fa.json"}) {
        const std::string ref_text = out(suffix);
        ASSERT_EQ(e.n_tokens, test::json_int(ref_text, "n_tokens")) << suffix;
        ASSERT_EQ(e.n_embd, test::json_int(ref_text, "n_embd")) << suffix;
        const auto ref = test::json_numbers(ref_text, "embd");
        ASSERT_EQ(ref.size(), e.values.size()) << suffix;
        const double err = nmse(e.values, ref);
        EXPECT_LE(err, 1e-4) << suffix;
        std::printf("%s %s %s: %lld tokens x %lld, nmse %.3e\n", GetParam().file, GetParam().image, suffix,
                    static_cast<long long>(e.n_tokens), static_cast<long long>(e.n_embd), err);
    }
}

// The float64 reference forward matches llama.cpp too (the README measured
// 2.5e-7 for its NumPy version).
TEST_P(MmprojFixture, ReferenceEncoderMatchesLlamaCpp) {
    const auto m = Mmproj::open((dir_ / ("mmproj-" + std::string(GetParam().file) + ".gguf")).string());
    const std::string pixels = out(".pixels.json");
    FloatImage px;
    px.width = test::json_int(pixels, "width");
    px.height = test::json_int(pixels, "height");
    for (double v : test::json_numbers(pixels, "values")) px.values.push_back(static_cast<float>(v));
    const ImageEmbeddings e = reference_encode_image(*m, px);
    const auto ref = test::json_numbers(out(".embd.json"), "embd");
    ASSERT_EQ(ref.size(), e.values.size());
    const double err = nmse(e.values, ref);
    EXPECT_LE(err, 1e-4);
    std::printf("%s %s reference: nmse %.3e\n", GetParam().file, GetParam().image, err);
}

INSTANTIATE_TEST_SUITE_P(AllProjectors, MmprojFixture,
                         ::testing::Values(Case{"gemma3", "img-a"}, Case{"gemma3", "img-b"}, Case{"mlp", "img-a"},
                                           Case{"mlp", "img-b"}, Case{"qwen2vl", "img-a"}, Case{"qwen2vl", "img-b"},
                                           Case{"muse-glimmer", "img-a"}, Case{"muse-glimmer", "img-b"}),
                         [](const auto& info) {
                             std::string name = std::string(info.param.file) + "_" + info.param.image;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

// The PNG decodes to exactly llama.cpp's pixels. The JPEG goes through
// Debian's stb_image (2.27; llama.cpp bundles 2.30): the README leaves JPEG
// decoders out of the exact rule, and the two agree here.
TEST(MmprojFixtureImages, DecodingMatchesLlamaCpp) {
    const auto dir = test::mmproj_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "mmproj fixtures not found (set CRIA_MMPROJ_FIXTURES or provide ../shared)";
    for (const auto& [file, ref] : {std::pair{"img-a-96x64.png", "img-a.decoded.ppm"}, {"img-b-50x75.jpg", "img-b.decoded.ppm"}}) {
        const RgbImage got = decode_image(test::read_bytes(dir / file), file);
        const RgbImage want = read_ppm(test::read_bytes(dir / ref), ref);
        EXPECT_EQ(got.width, want.width) << file;
        EXPECT_EQ(got.height, want.height) << file;
        EXPECT_TRUE(got.pixels == want.pixels) << file;
    }
}

}  // namespace
}  // namespace cria::vision
