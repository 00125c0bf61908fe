// Each projector family end to end with a text model of its kind: llama.cpp's
// four fixture projectors (../shared/testdata/mmproj-fixtures, width 64;
// skipped, saying so, without them) with random text models of width 64 from
// the synthetic writer (vocabularies included, unlike the arch fixtures):
// gemma3 (image attended both ways), qwen2vl_merger with an M-RoPE text model
// (glm4moe: the 4x3 grid takes 4 positions), muse-glimmer and mlp with
// sequential positions. The prompt with delimiters decodes and generates.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cria/media/eval_prompt.h"
#include "cria/media/image_positions.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/ops/cpu_ops.h"
#include "cria/runtime/context.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace {

using namespace cria;

struct Pair {
    const char* projector_file;
    const char* text_arch;
    int64_t n_tokens, n_positions;  // of image A (96x64)
    bool non_causal, mrope;
};

class ProjectorPairs : public ::testing::TestWithParam<Pair> {};

TEST_P(ProjectorPairs, APromptWithAnImageDecodesAndGenerates) {
    const auto dir = test::mmproj_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "mmproj fixtures not found (set CRIA_MMPROJ_FIXTURES or provide ../shared)";
    const Pair& p = GetParam();
    const std::string text_path = (test::temp_dir() / (std::string("pair-") + p.text_arch + ".gguf")).string();
    auto spec = model::SyntheticModelSpec::tiny(p.text_arch);
    ASSERT_EQ(spec.n_embd, 64u);
    model::write_synthetic_model(spec, text_path);
    const auto model = model::Model::load(text_path);
    const auto vocab = vocab::Vocab::from_gguf(model->file());
    ASSERT_EQ(model->hparams().rope_order == model::RopeOrder::MRope, p.mrope);

    const auto mmproj = vision::Mmproj::open((dir / p.projector_file).string());
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    const auto image = media::encode_image_chunk(*mmproj, vision::load_image_file((dir / "img-a-96x64.png").string()), ops);
    EXPECT_EQ(image->n_tokens, p.n_tokens);
    EXPECT_EQ(image->non_causal, p.non_causal);
    EXPECT_EQ(media::image_position_count(*image, p.mrope), p.n_positions);

    const std::vector<std::shared_ptr<const media::ImageChunk>> images{image};
    const media::ImageDelimiters delim = media::image_delimiters(mmproj->hparams().projector);
    const auto prompt = media::tokenize_media_prompt(vocab, "Describe <__media__> now", images, delim,
                                                     media::kDefaultMediaMarker, true, p.mrope);
    runtime::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 2;
    runtime::Context ctx(*model, cp);
    const int32_t end = media::eval_media_prompt(ctx, prompt, 0, 0, true);
    EXPECT_EQ(end, prompt.n_positions());
    const auto text_tokens = prompt.n_tokens() - p.n_tokens;
    EXPECT_EQ(end, text_tokens + p.n_positions);
    for (float v : ctx.logits(-1)) ASSERT_TRUE(std::isfinite(v));
    // One generated token on top, at the next position.
    runtime::Batch b;
    b.add(7, end, {0}, true);
    ASSERT_EQ(ctx.decode(b), 0);
    for (float v : ctx.logits(-1)) ASSERT_TRUE(std::isfinite(v));
    EXPECT_EQ(ctx.memory_seq_pos_max(0), end);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ProjectorPairs,
                         ::testing::Values(Pair{"mmproj-gemma3.gguf", "gemma3", 4, 4, true, false},
                                           Pair{"mmproj-qwen2vl.gguf", "glm4moe", 12, 4, false, true},
                                           Pair{"mmproj-muse-glimmer.gguf", "muse-glimmer", 6, 6, false, false},
                                           Pair{"mmproj-mlp.gguf", "llama", 64, 64, false, false}),
                         [](const auto& info) {
                             std::string n = info.param.projector_file;
                             n = n.substr(7, n.size() - 12);  // mmproj-X.gguf -> X
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

// Against llama.cpp's own record of each case (meta.json): the token grid,
// whether the image block is attended both ways, how far it advances the
// positions, and under M-RoPE every token's (t, h, w, e) relative to p0.
TEST(ProjectorLayouts, MatchLlamaCppsDecoderLayout) {
    const auto dir = test::mmproj_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "mmproj fixtures not found (set CRIA_MMPROJ_FIXTURES or provide ../shared)";
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    for (const std::string proj : {"gemma3", "qwen2vl", "muse-glimmer", "mlp"})
        for (const std::string img : {"img-a", "img-b"}) {
            SCOPED_TRACE(proj + " " + img);
            std::ifstream in(dir / "out" / (proj + "__" + img + ".meta.json"));
            const auto meta = nlohmann::json::parse(in);
            const auto mmproj = vision::Mmproj::open((dir / ("mmproj-" + proj + ".gguf")).string());
            const auto chunk = media::encode_image_chunk(
                *mmproj, vision::load_image_file((dir / (img == "img-a" ? "img-a-96x64.png" : "img-b-50x75.jpg")).string()),
                ops);
            const bool mrope = meta["decoder_mrope"].get<bool>();
            EXPECT_EQ(chunk->n_tokens, meta["n_tokens"].get<int64_t>());
            EXPECT_EQ(chunk->non_causal, meta["decoder_non_causal"].get<bool>());
            EXPECT_EQ(media::image_position_count(*chunk, mrope), meta["n_pos_advance"].get<int32_t>());
            if (!mrope) continue;
            EXPECT_EQ(chunk->nx, meta["token_grid_x"].get<int64_t>());
            EXPECT_EQ(chunk->ny, meta["token_grid_y"].get<int64_t>());
            const auto& want = meta["mrope_positions_t_h_w_e"];
            ASSERT_EQ(static_cast<int64_t>(want.size()), chunk->n_tokens);
            for (int64_t i = 0; i < chunk->n_tokens; ++i) {
                const auto got = media::mrope_image_position(0, i, chunk->nx);
                for (int s = 0; s < 4; ++s) EXPECT_EQ(got[static_cast<size_t>(s)], want[static_cast<size_t>(i)][s].get<int32_t>()) << i;
            }
        }
}

}  // namespace
