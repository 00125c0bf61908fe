// Images for an M-RoPE text model in the server: a tiny random glm4moe (the
// synthetic writer's M-RoPE family, width 64) with llama.cpp's qwen2vl
// projector fixture (../shared/testdata/mmproj-fixtures; skipped, saying so,
// without it). An image of n tokens takes max(nx, ny) positions and its
// tokens their grid sections; the text after it goes on from there. The
// scheduler's greedy tokens equal cria run's path (media::eval_media_prompt,
// then runtime::continue_generation), for a first request and a second one
// that reuses the cached prefix with both images. A slot save is refused
// with a clear error (the file format does not record the cells' order).
#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/media/eval_prompt.h"
#include "cria/media/image_chunk.h"
#include "cria/media/image_positions.h"
#include "cria/media/media_prompt.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/ops/cpu_ops.h"
#include "cria/runtime/context.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/chain.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "support/test_paths.h"

using namespace cria;
using namespace cria::server;

namespace {

constexpr int kPredict = 16;

std::vector<TokenId> wait_ids(const std::shared_ptr<RequestHandle>& h, GenerationEvent& done) {
    std::vector<TokenId> ids;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            for (const auto& lp : ev->logprobs) ids.push_back(lp.id);
            continue;
        }
        done = *ev;
        return ids;
    }
    ADD_FAILURE() << "no result within 60 s";
    return ids;
}

GenerationRequest request_of(const media::MediaPrompt& mp) {
    GenerationRequest g;
    for (const auto& c : mp.chunks) {
        if (!c.is_image()) {
            g.prompt.insert(g.prompt.end(), c.tokens.begin(), c.tokens.end());
            continue;
        }
        g.images.push_back({g.prompt.size(), c.image});
        g.prompt.insert(g.prompt.end(), static_cast<size_t>(c.image->n_tokens), image_placeholder(c.image->hash));
    }
    g.sampling.temp = 0.0f;
    g.max_tokens = kPredict;
    g.top_logprobs = 0;  // the events carry the token ids
    return g;
}

TEST(MropeImagesInTheServer, GreedyTokensEqualCriaRunsWithPrefixReuse) {
    const auto dir = test::mmproj_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "mmproj fixtures not found (set CRIA_MMPROJ_FIXTURES or provide ../shared)";
    const std::string text_path = (test::temp_dir() / "server-mrope-glm4moe.gguf").string();
    model::write_synthetic_model(model::SyntheticModelSpec::tiny("glm4moe"), text_path);
    const auto model = model::Model::load(text_path);
    ASSERT_EQ(model->hparams().rope_order, model::RopeOrder::MRope);
    const auto vocab = vocab::Vocab::from_gguf(model->file());

    const auto mmproj = vision::Mmproj::open((dir / "mmproj-qwen2vl.gguf").string());
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    const std::vector<std::shared_ptr<const media::ImageChunk>> images{
        media::encode_image_chunk(*mmproj, vision::load_image_file((dir / "img-a-96x64.png").string()), ops),
        media::encode_image_chunk(*mmproj, vision::load_image_file((dir / "img-b-50x75.jpg").string()), ops)};
    for (const auto& img : images) ASSERT_LT(media::image_position_count(*img, true), img->n_tokens);
    const auto mp = media::tokenize_media_prompt(vocab, "Look <__media__> and <__media__> then tell", images,
                                                 media::image_delimiters(mmproj->hparams().projector),
                                                 media::kDefaultMediaMarker, true, true);

    // cria run's path.
    std::vector<TokenId> expected;
    {
        runtime::ContextParams cp;
        cp.n_ctx = 256;
        cp.n_threads = 2;
        runtime::Context ctx(*model, cp);
        sampling::SamplingParams sp;
        sp.temp = 0.0f;
        sampling::ChainContext cc;
        cc.vocab = &vocab;
        auto chain = sampling::build_chain(sp, cc);
        const int32_t n_past = media::eval_media_prompt(ctx, mp, 0, 0, true);
        ASSERT_EQ(n_past, mp.n_positions());
        for (const auto& c : mp.chunks)
            for (auto t : c.tokens) chain.accept_prompt(t);
        expected = runtime::continue_generation(ctx, vocab, chain, n_past, kPredict).tokens;
    }
    ASSERT_EQ(expected.size(), static_cast<size_t>(kPredict));

    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 256;
    bp.n_batch = 64;
    bp.n_threads = 2;
    RuntimeBackend backend(text_path, bp);
    ASSERT_TRUE(backend.mrope());
    SchedulerOptions opt;
    opt.n_batch = 64;
    Scheduler s(backend, opt);
    GenerationEvent done;
    EXPECT_EQ(wait_ids(s.submit(request_of(mp)), done), expected) << done.error;
    ASSERT_EQ(done.kind, GenerationEvent::Kind::Done) << done.error;
    EXPECT_EQ(done.n_cached, 0);
    // Again: the cached prefix with both images is reused (positions from the
    // recorded image ranges), the rest recomputed.
    EXPECT_EQ(wait_ids(s.submit(request_of(mp)), done), expected);
    EXPECT_GT(done.n_cached, images[0]->n_tokens + images[1]->n_tokens);
    // A slot file cannot record an M-RoPE image's cells yet (they share
    // positions): saving says so, and the slot goes on serving.
    const std::string slot_file = (test::temp_dir() / "server-mrope.slot").string();
    try {
        s.save_slot(0, slot_file);
        ADD_FAILURE() << "saved a slot holding an M-RoPE image";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("M-RoPE"), std::string::npos) << e.what();
    }
    EXPECT_EQ(wait_ids(s.submit(request_of(mp)), done), expected);
}

}  // namespace
