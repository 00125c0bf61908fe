// Image embeddings through a real (tiny, random) text model: batching does
// not change the result, gemma3's image block attends both ways, and M-RoPE
// images keep causal order at one position while text after them sees all.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "cria/core/error.h"
#include "cria/media/eval_prompt.h"
#include "cria/media/image_positions.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace {

using namespace cria;

const model::Model& tiny_model(const std::string& arch) {
    static std::map<std::string, std::unique_ptr<model::Model>> models;
    auto& m = models[arch];
    if (!m) {
        const std::string path = (test::temp_dir() / ("media-eval-" + arch + ".gguf")).string();
        model::write_synthetic_model(model::SyntheticModelSpec::tiny(arch), path);
        m = model::Model::load(path);
    }
    return *m;
}

runtime::ContextParams params(uint32_t n_batch = 64, uint32_t n_ubatch = 64) {
    runtime::ContextParams cp;
    cp.n_ctx = 128;
    cp.n_batch = n_batch;
    cp.n_ubatch = n_ubatch;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = ElementType::F32;
    return cp;
}

media::ImageChunk random_image(int64_t nx, int64_t ny, int64_t n_embd, uint32_t seed, bool non_causal) {
    media::ImageChunk c;
    c.nx = nx;
    c.ny = ny;
    c.n_tokens = nx * ny;
    c.n_embd = n_embd;
    c.non_causal = non_causal;
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    c.embd.resize(static_cast<size_t>(c.n_tokens * n_embd));
    for (float& x : c.embd) x = d(rng);
    return c;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
    return m;
}

// Logits of every entry of one embedding batch at positions p0.. (or M-RoPE sections).
std::vector<std::vector<float>> image_logits(runtime::Context& ctx, const media::ImageChunk& img, int32_t p0, bool mrope,
                                             bool causal) {
    runtime::Batch b;
    b.set_causal(causal);
    for (int64_t i = 0; i < img.n_tokens; ++i) {
        const float* row = img.embd.data() + i * img.n_embd;
        if (mrope)
            b.add_embedding(row, static_cast<int32_t>(img.n_embd), media::mrope_image_position(p0, i, img.nx),
                            static_cast<int32_t>(i), {0}, true);
        else
            b.add_embedding(row, static_cast<int32_t>(img.n_embd), p0 + static_cast<int32_t>(i), {0}, true);
    }
    if (ctx.decode(b) != 0) throw Error("no room");
    std::vector<std::vector<float>> out;
    for (int64_t i = 0; i < img.n_tokens; ++i) out.push_back(copy(ctx.logits(static_cast<int32_t>(i))));
    return out;
}

// A prompt "t t [image] t" decoded by eval_media_prompt; the last logits.
std::vector<float> prompt_logits(const model::Model& m, const runtime::ContextParams& cp,
                                 const std::shared_ptr<const media::ImageChunk>& img, bool mrope) {
    runtime::Context ctx(m, cp);
    media::MediaPrompt p;
    p.mrope = mrope;
    p.chunks.push_back({{5, 9}, nullptr});
    p.chunks.push_back({{}, img});
    p.chunks.push_back({{17}, nullptr});
    const int32_t end = media::eval_media_prompt(ctx, p, 0, 0, true);
    EXPECT_EQ(end, p.n_positions());
    return copy(ctx.logits(-1));
}

TEST(EvalPrompt, BatchSizeDoesNotChangeTheResult) {
    const auto& m = tiny_model("llama");
    const auto img = std::make_shared<media::ImageChunk>(random_image(5, 1, m.hparams().n_embd, 1, false));
    const auto whole = prompt_logits(m, params(64, 64), img, false);
    const auto pieces = prompt_logits(m, params(2, 2), img, false);  // the image in three batches
    EXPECT_LT(max_abs_diff(whole, pieces), 1e-4);
}

TEST(EvalPrompt, TheTextAfterAnImageSeesIt) {
    const auto& m = tiny_model("llama");
    auto a = random_image(3, 1, m.hparams().n_embd, 2, false);
    auto b = a;
    b.embd.back() += 1.0f;  // only the last image token differs
    const auto la = prompt_logits(m, params(), std::make_shared<media::ImageChunk>(a), false);
    const auto lb = prompt_logits(m, params(), std::make_shared<media::ImageChunk>(b), false);
    EXPECT_GT(max_abs_diff(la, lb), 1e-3);
}

TEST(EvalPrompt, AnImageBlockAttendedBothWaysSeesItsLaterTokens) {
    const auto& m = tiny_model("gemma3");
    auto a = random_image(4, 1, m.hparams().n_embd, 3, true);
    auto b = a;
    for (int64_t i = 0; i < a.n_embd; ++i) b.embd[static_cast<size_t>(3 * a.n_embd + i)] += 1.0f;  // token 3
    for (bool causal : {true, false}) {
        runtime::Context ca(m, params()), cb(m, params());
        const auto la = image_logits(ca, a, 0, false, causal);
        const auto lb = image_logits(cb, b, 0, false, causal);
        // Token 0 sees token 3 only when the block is not causal.
        if (causal)
            EXPECT_LT(max_abs_diff(la[0], lb[0]), 1e-6);
        else
            EXPECT_GT(max_abs_diff(la[0], lb[0]), 1e-3);
        EXPECT_GT(max_abs_diff(la[3], lb[3]), 1e-3);
    }
}

TEST(EvalPrompt, AnImageAttendedBothWaysMustFitOneMicroBatch) {
    const auto& m = tiny_model("gemma3");
    runtime::Context ctx(m, params(64, 4));
    const auto img = random_image(6, 1, m.hparams().n_embd, 4, true);
    EXPECT_THROW(media::eval_image_chunk(ctx, img, 0, 0, false, false), Error);
    runtime::Context fits(m, params(64, 8));
    EXPECT_NO_THROW(media::eval_image_chunk(fits, img, 0, 0, false, true));
}

TEST(EvalPrompt, MRopeTokensAtOnePositionStayCausalInRasterOrder) {
    const auto& m = tiny_model("glm4moe");
    ASSERT_EQ(m.hparams().rope_order, model::RopeOrder::MRope);
    auto a = random_image(2, 2, m.hparams().n_embd, 5, false);
    auto b = a;
    for (int64_t i = 0; i < a.n_embd; ++i) b.embd[static_cast<size_t>(2 * a.n_embd + i)] += 1.0f;  // token 2
    runtime::Context ca(m, params()), cb(m, params());
    const auto la = image_logits(ca, a, 3, true, true);
    const auto lb = image_logits(cb, b, 3, true, true);
    EXPECT_EQ(max_abs_diff(la[0], lb[0]), 0.0);
    EXPECT_EQ(max_abs_diff(la[1], lb[1]), 0.0);
    EXPECT_GT(max_abs_diff(la[2], lb[2]), 1e-3);
    EXPECT_GT(max_abs_diff(la[3], lb[3]), 1e-3);  // a later token sees it
    // All four share the cache position 3.
    EXPECT_EQ(ca.memory_seq_pos_max(0), 3);
}

TEST(EvalPrompt, MRopeSectionsReachTheRotation) {
    const auto& m = tiny_model("glm4moe");
    const auto img = random_image(3, 1, m.hparams().n_embd, 6, false);
    // The same rows at plain positions 0..2 rotate as (p, p, p, 0); with
    // sections (0, 0, col, 0) the rotation differs for tokens 1 and 2 only.
    runtime::Context plain(m, params()), sections(m, params());
    const auto lp = image_logits(plain, img, 0, false, true);
    const auto ls = image_logits(sections, img, 0, true, true);
    EXPECT_LT(max_abs_diff(lp[0], ls[0]), 1e-5);
    EXPECT_GT(max_abs_diff(lp[2], ls[2]), 1e-4);
}

TEST(EvalPrompt, MRopeEntriesWithTextSectionsMatchPlainEmbeddings) {
    // (p, p, p, 0) per entry is exactly what a plain entry at p rotates by:
    // checks that the batch's [t, h, w, e] rows reach the model section-major.
    const auto& m = tiny_model("glm4moe");
    const auto img = random_image(4, 1, m.hparams().n_embd, 7, false);
    runtime::Context plain(m, params()), explicit_sections(m, params());
    const auto lp = image_logits(plain, img, 2, false, true);
    runtime::Batch b;
    for (int32_t i = 0; i < 4; ++i)
        b.add_embedding(img.embd.data() + i * img.n_embd, static_cast<int32_t>(img.n_embd), {2 + i, 2 + i, 2 + i, 0}, 0,
                        {0}, true);
    ASSERT_EQ(explicit_sections.decode(b), 0);
    for (int32_t i = 0; i < 4; ++i) EXPECT_LT(max_abs_diff(lp[static_cast<size_t>(i)], copy(explicit_sections.logits(i))), 1e-6);
}

TEST(EvalPrompt, MRopeTextAfterTheImageStartsAtTheLongerSide) {
    const auto& m = tiny_model("glm4moe");
    const auto img = std::make_shared<media::ImageChunk>(random_image(3, 2, m.hparams().n_embd, 8, false));
    runtime::Context ctx(m, params());
    media::MediaPrompt p;
    p.mrope = true;
    p.chunks.push_back({{5, 9}, nullptr});
    p.chunks.push_back({{}, img});
    p.chunks.push_back({{17}, nullptr});
    EXPECT_EQ(media::eval_media_prompt(ctx, p, 0, 0, true), 2 + 3 + 1);
    EXPECT_EQ(ctx.memory_seq_pos_max(0), 5);  // the text token after the image at 2 + max(3, 2)
}

TEST(EvalPrompt, AnImageOfAnotherWidthIsRefused) {
    const auto& m = tiny_model("llama");
    runtime::Context ctx(m, params());
    const auto img = random_image(2, 1, m.hparams().n_embd + 1, 9, false);
    EXPECT_THROW(media::eval_image_chunk(ctx, img, 0, 0, false, false), Error);
}

}  // namespace
