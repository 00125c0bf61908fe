// GET /metrics in router mode: without ?model= one scrape reports every
// loaded model, each sample labelled model="NAME" under one HELP/TYPE per
// family (Prometheus text format); unloaded models are absent; ?model=
// still gives that model's metrics alone, unlabelled, as one server does.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <string>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(RouterMetrics, OneScrapeCoversEveryLoadedModel) {
    std::signal(SIGPIPE, SIG_IGN);
    RouterConfig rc;
    rc.models = {{"stories", cria::test::model_path("stories260K/stories260K.gguf").string(), {}, -1, -1},
                 {"austen", cria::test::model_path("austen-1m/austen-1m-f16.gguf").string(), {}, -1, -1}};
    rc.make_backend = [](const ModelEntry& e) -> std::unique_ptr<Backend> {
        RuntimeBackendParams bp;
        bp.n_seq = 1;
        bp.n_ctx = 256;
        bp.n_threads = 1;
        return std::make_unique<RuntimeBackend>(e.path, bp);
    };
    rc.limits.max_loaded = 4;
    ServerConfig config;
    config.port = 0;
    config.metrics = true;
    Server server(std::move(rc), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(30, 0);

    auto scrape = [&](const std::string& path) {
        auto r = c.Get(path);
        EXPECT_TRUE(r);
        if (!r) return std::string();
        EXPECT_EQ(r->status, 200) << r->body;
        return r->body;
    };
    // Nothing loaded: the families, no model's samples (and nothing loads).
    std::string text = scrape("/metrics");
    EXPECT_NE(text.find("# TYPE cria:requests_total counter"), std::string::npos);
    EXPECT_EQ(count(text, "model=\""), 0u);
    const json list = json::parse(c.Get("/models")->body);
    for (const auto& m : list["data"]) EXPECT_EQ(m["status"]["value"], "unloaded");

    ASSERT_EQ(c.Post("/models/load", json{{"model", "austen"}}.dump(), "application/json")->status, 200);
    const json completion = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}};
    ASSERT_EQ(c.Post("/v1/completions", completion.dump(), "application/json")->status, 200);
    text = scrape("/metrics");
    EXPECT_NE(text.find("cria:requests_total{model=\"stories\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("cria:requests_total{model=\"austen\"} 0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("cria:tokens_predicted_total{model=\"stories\"} 4\n"), std::string::npos) << text;
    EXPECT_NE(text.find("cria:slots_total{model=\"austen\"} 1\n"), std::string::npos) << text;
    // Each family is declared once, before its samples of every model.
    EXPECT_EQ(count(text, "# HELP cria:requests_total "), 1u);
    EXPECT_EQ(count(text, "# TYPE cria:requests_total "), 1u);
    EXPECT_LT(text.find("# TYPE cria:requests_total "), text.find("cria:requests_total{model=\"stories\"}"));
    EXPECT_EQ(count(text, "\ncria:http_requests_total "), 1u);  // the server's, unlabelled

    // One model named: its metrics alone, as a one-model server gives them.
    text = scrape("/metrics?model=stories");
    EXPECT_NE(text.find("cria:requests_total 1\n"), std::string::npos) << text;
    EXPECT_EQ(count(text, "model=\""), 0u);

    // An unloaded model leaves the scrape.
    ASSERT_EQ(c.Post("/models/unload", json{{"model", "austen"}}.dump(), "application/json")->status, 200);
    text = scrape("/metrics");
    EXPECT_EQ(count(text, "model=\"austen\""), 0u);
    EXPECT_NE(text.find("cria:requests_total{model=\"stories\"} 1\n"), std::string::npos) << text;
    server.stop();
}

}  // namespace
