// The neural drafters added for issue 17 through the HTTP server: a server
// drafting with draft-mtp (the mimo2 target's own NextN block) and one with
// draft-dspark (-md, austen-7m target), each asked per request for its
// drafter or for none: the text is the same, drafts are made and accepted,
// and they show in `timings` and on /metrics.

#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/sampling/chain.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "cria/spec/speculative.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

std::filesystem::path fixtures_dir() {
    if (const char* env = std::getenv("CRIA_DRAFTER_FIXTURES")) return env;
    const auto dir = cria::test::source_dir().parent_path() / "shared" / "testdata" / "drafter-fixtures";
    return std::filesystem::exists(dir / "mimo2-austen-1m-mtp.gguf") ? dir : std::filesystem::path();
}

void check_drafter_over_http(const std::string& model, const cria::spec::SpecParams& spec, const std::string& type) {
    std::signal(SIGPIPE, SIG_IGN);
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_threads = 2;
    ServerConfig config;
    config.port = 0;
    config.model_path = model;
    config.metrics = true;
    config.scheduler.speculative = spec;
    Server server(std::make_unique<RuntimeBackend>(model, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(60, 0);
    json body = json::parse(R"({"prompt":"Emma Woodhouse, handsome, clever, and rich,","max_tokens":48,"temperature":0})");
    body["speculative"] = {{"type", "none"}};
    auto plain = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200) << plain->body;
    body["speculative"] = {{"type", type}, {"n_max", 3}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json out = json::parse(r->body);
    EXPECT_EQ(out["choices"][0]["text"], json::parse(plain->body)["choices"][0]["text"]) << type;
    const int drafted = out["timings"]["draft_n"].get<int>();
    const int accepted = out["timings"]["draft_n_accepted"].get<int>();
    EXPECT_GT(drafted, 0) << type;
    EXPECT_GT(accepted, 0) << type;
    EXPECT_LE(accepted, drafted);
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("\ncria:spec_tokens_drafted_total " + std::to_string(drafted) + "\n"), std::string::npos)
        << m->body;
    server.stop();
}

// A server drafting with a head that reads the target's features drafts
// what `cria run` drafts (spec::Speculator) for the same prompt, greedy:
// every prompt row's features reach the head, and the last prompt token is
// verified with the first draft. Same counts per draft position, same text.
void check_drafts_as_cria_run(const std::string& draft_file, int n_max) {
    std::signal(SIGPIPE, SIG_IGN);
    const std::string target = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const std::string text = "Elizabeth looked at her sister and said";
    const int n_predict = 40;
    cria::spec::SpecParams spec;
    spec.draft_model = (fixtures_dir() / draft_file).string();
    spec.adaptive = false;
    spec.draft.p_min = 0.0f;
    spec.n_max = spec.draft.n_max = n_max;

    // cria run's way.
    const auto m = cria::model::Model::load(target);
    const auto vocab = cria::vocab::Vocab::from_gguf(m->file());
    cria::runtime::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    cria::runtime::Context ctx(*m, cp);
    cria::spec::Speculator speculator(spec, cria::spec::make_drafters(spec, ctx, vocab));
    cria::sampling::SamplingParams sp;
    sp.temp = 0.0f;
    cria::sampling::ChainContext cc;
    cc.vocab = &vocab;
    auto chain = cria::sampling::build_chain(sp, cc);
    const auto run = speculator.generate(ctx, vocab, chain, vocab.tokenize(text, true, true), n_predict);
    const cria::spec::Metrics& want = speculator.metrics();
    ASSERT_EQ(want.drafters.size(), 1u);
    ASSERT_GT(want.tokens_accepted(), 0) << want.format();

    // The server's.
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_threads = 2;
    ServerConfig config;
    config.port = 0;
    config.model_path = target;
    config.scheduler.speculative = spec;
    Server server(std::make_unique<RuntimeBackend>(target, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(60, 0);
    json body = {{"prompt", text}, {"max_tokens", n_predict}, {"temperature", 0}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json out = json::parse(r->body);
    EXPECT_EQ(out["choices"][0]["text"].get<std::string>(), vocab.detokenize(run.tokens)) << draft_file;
    const json& t = out["timings"];
    EXPECT_EQ(t["draft_n"].get<int64_t>(), want.tokens_drafted()) << want.format() << "\n" << t.dump();
    EXPECT_EQ(t["draft_n_accepted"].get<int64_t>(), want.tokens_accepted()) << want.format() << "\n" << t.dump();
    EXPECT_EQ(t["draft_n_steps"].get<int64_t>(), want.n_verify_steps);
    EXPECT_EQ(t["draft_n_per_position"].get<std::vector<int64_t>>(), want.drafters[0].position_tried) << t.dump();
    EXPECT_EQ(t["draft_n_accepted_per_position"].get<std::vector<int64_t>>(), want.drafters[0].position_accepted)
        << t.dump();
    server.stop();
}

TEST(HttpHeadDrafters, Eagle3DraftsAsCriaRun) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    check_drafts_as_cria_run("eagle3-austen-7m.gguf", 5);
}

TEST(HttpHeadDrafters, DflashDraftsAsCriaRun) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    check_drafts_as_cria_run("dflash-austen-7m.gguf", 7);
}

TEST(HttpHeadDrafters, MtpPerRequest) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    cria::spec::SpecParams spec;
    spec.types = {cria::spec::SpecType::Mtp};  // the target's own NextN block
    spec.adaptive = false;
    spec.draft.p_min = 0.0f;
    spec.n_max = spec.draft.n_max = 3;
    check_drafter_over_http((fixtures_dir() / "mimo2-austen-1m-mtp.gguf").string(), spec, "draft-mtp");
}

TEST(HttpHeadDrafters, DsparkPerRequest) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    cria::spec::SpecParams spec;
    spec.draft_model = (fixtures_dir() / "dspark-austen-7m.gguf").string();  // detected as draft-dspark
    spec.adaptive = false;
    spec.draft.p_min = 0.0f;
    spec.n_max = spec.draft.n_max = 7;
    check_drafter_over_http(cria::test::model_path("austen-7m/austen-7m-f32.gguf").string(), spec, "draft-dspark");
}

}  // namespace
