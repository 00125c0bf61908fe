// The server's speculative step with images in the prompt: for every drafter
// kind, a slot drafting over a prompt with two images gives the greedy text
// it gives with drafting off, drafts are made and accepted. The images are
// random embedding rows of the target's width (the scheduler takes image
// chunks, whoever encoded them); the target is austen-7m, whose drafter
// heads are in ../shared/testdata/drafter-fixtures (those cases are skipped,
// saying so, without it). The feature-reading drafters are seeded from the
// image rows too (Backend::decode_image with features); a prompt whose only
// text after its last image is its last token starts generating all the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "cria/media/media_prompt.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "cria/spec/params.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

std::filesystem::path drafter_fixtures() {
    if (const char* env = std::getenv("CRIA_DRAFTER_FIXTURES")) return env;
    const auto dir = cria::test::source_dir().parent_path() / "shared" / "testdata" / "drafter-fixtures";
    return std::filesystem::exists(dir / "eagle3-austen-7m.gguf") ? dir : std::filesystem::path();
}

struct Result {
    std::string text;
    GenerationEvent done;
};

Result wait(const std::shared_ptr<RequestHandle>& h) {
    Result r;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            r.text += ev->text;
            continue;
        }
        r.done = *ev;
        return r;
    }
    ADD_FAILURE() << "no result within 60 s";
    return r;
}

std::shared_ptr<const cria::media::ImageChunk> random_image(int64_t n_tokens, int64_t n_embd, uint64_t hash) {
    auto c = std::make_shared<cria::media::ImageChunk>();
    c->nx = n_tokens;
    c->ny = 1;
    c->n_tokens = n_tokens;
    c->n_embd = n_embd;
    c->hash = hash;
    std::mt19937 rng(static_cast<uint32_t>(hash));
    std::normal_distribution<float> d(0.0f, 0.02f);
    c->embd.resize(static_cast<size_t>(n_tokens * n_embd));
    for (float& x : c->embd) x = d(rng);
    return c;
}

// The request for `text` (its markers taking the images), greedy.
GenerationRequest image_request(RuntimeBackend& backend, const std::string& text, int n_images, int max_tokens) {
    const int64_t n_embd = backend.model().hparams().n_embd;
    std::vector<std::shared_ptr<const cria::media::ImageChunk>> images;
    for (int i = 0; i < n_images; ++i) images.push_back(random_image(5 - i, n_embd, 0x1234567u + 977u * i));
    const auto mp = cria::media::tokenize_media_prompt(backend.vocab(), text, images, {},
                                                       cria::media::kDefaultMediaMarker, true, false);
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
    g.max_tokens = max_tokens;
    return g;
}

struct Case {
    const char* name;
    cria::spec::SpecType type;
    const char* file;  // a head in drafter-fixtures, or a test model for -md; "" none
    bool head;
};

class ServerSpeculativeImages : public ::testing::TestWithParam<Case> {};

TEST_P(ServerSpeculativeImages, GreedyTextEqualsDraftingOff) {
    const Case& c = GetParam();
    if (c.head && drafter_fixtures().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const bool mtp = c.type == cria::spec::SpecType::Mtp;
    const std::string model = mtp ? (drafter_fixtures() / "mimo2-austen-1m-mtp.gguf").string()
                                  : cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_batch = 64;
    bp.n_threads = 2;
    RuntimeBackend backend(model, bp);
    SchedulerOptions opt;
    opt.n_batch = 64;
    cria::spec::SpecParams& p = opt.speculative;
    if (c.type != cria::spec::SpecType::Eagle3 && c.type != cria::spec::SpecType::Dflash &&
        c.type != cria::spec::SpecType::Dspark)
        p.types = {c.type};
    p.adaptive = false;
    p.n_max = p.draft.n_max = 6;
    p.draft.p_min = 0.0f;
    p.ngram_simple = {2, 8, 1};
    p.ngram_map_k = {2, 8, 1};
    p.ngram_map_k4v = {2, 4, 1};
    p.ngram_mod = {3, 1, 8};
    if (c.head && *c.file) p.draft_model = (drafter_fixtures() / c.file).string();
    else if (!c.head && *c.file) p.draft_model = cria::test::model_path(c.file).string();
    Scheduler s(backend, opt);

    const std::string text =
        "Elizabeth looked at her sister and said <__media__> Elizabeth looked at her sister and said that "
        "<__media__> she would not go. Elizabeth looked at her sister and said";
    GenerationRequest off = image_request(backend, text, 2, 40);
    off.speculative.given = true;
    off.speculative.type = "none";
    const Result plain = wait(s.submit(off));
    ASSERT_EQ(plain.done.kind, GenerationEvent::Kind::Done) << plain.done.error;
    EXPECT_EQ(plain.done.n_drafted, 0);
    ASSERT_EQ(plain.done.n_generated, 40);

    const Result drafted = wait(s.submit(image_request(backend, text, 2, 40)));
    ASSERT_EQ(drafted.done.kind, GenerationEvent::Kind::Done) << drafted.done.error;
    EXPECT_EQ(drafted.text, plain.text);
    EXPECT_GT(drafted.done.n_drafted, 0);
    EXPECT_GT(drafted.done.n_draft_accepted, 0);

    // The image is followed by the prompt's last token only: with the
    // feature protocol that token is the first verify step's, so the request
    // starts generating right after the image.
    GenerationRequest tail_off = image_request(backend, "Elizabeth looked at her <__media__>.", 1, 12);
    tail_off.speculative.given = true;
    tail_off.speculative.type = "none";
    const Result tail_plain = wait(s.submit(tail_off));
    ASSERT_EQ(tail_plain.done.kind, GenerationEvent::Kind::Done) << tail_plain.done.error;
    const Result tail = wait(s.submit(image_request(backend, "Elizabeth looked at her <__media__>.", 1, 12)));
    ASSERT_EQ(tail.done.kind, GenerationEvent::Kind::Done) << tail.done.error;
    EXPECT_EQ(tail.text, tail_plain.text);
}

INSTANTIATE_TEST_SUITE_P(
    Drafters, ServerSpeculativeImages,
    ::testing::Values(Case{"ngram_simple", cria::spec::SpecType::NgramSimple, "", false},
                      Case{"ngram_map_k", cria::spec::SpecType::NgramMapK, "", false},
                      Case{"ngram_map_k4v", cria::spec::SpecType::NgramMapK4v, "", false},
                      Case{"ngram_mod", cria::spec::SpecType::NgramMod, "", false},
                      Case{"ngram_cache", cria::spec::SpecType::NgramCache, "", false},
                      Case{"draft_model", cria::spec::SpecType::Draft, "austen-1m/austen-1m-f32.gguf", false},
                      Case{"eagle3", cria::spec::SpecType::Eagle3, "eagle3-austen-7m.gguf", true},
                      Case{"dflash", cria::spec::SpecType::Dflash, "dflash-austen-7m.gguf", true},
                      Case{"dspark", cria::spec::SpecType::Dspark, "dspark-austen-7m.gguf", true},
                      Case{"mtp", cria::spec::SpecType::Mtp, "", true}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
