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

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
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
