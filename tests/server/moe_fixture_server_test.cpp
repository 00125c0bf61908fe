// What `cria serve` does with a mixture-of-experts model: the HTTP server over
// loopback on llama.cpp's qwen3moe fixture (routed experts; no tokenizer, so
// the prompt is token ids, which /v1/completions takes). A greedy completion
// of four tokens comes back whole, and its first token's log-probability is
// the best one of llama.cpp's own logits at the prompt's last position. With
// the server's ngram drafter the greedy completion is the plain one (the same
// log-probability at every step: no text to compare, the model has no
// tokenizer), with drafts made.

#include <gtest/gtest.h>

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "cria/spec/options.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

// log softmax of the row's best entry: the greedy token's log-probability.
double best_logprob(const std::vector<double>& row) {
    const double best = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double x : row) sum += std::exp(x - best);
    return -std::log(sum);
}

TEST(HttpMoeServer, GreedyCompletionFromTokenIdsOnQwen3Moe) {
    const std::filesystem::path dir = cria::test::arch_fixtures_dir();
    if (dir.empty())
        GTEST_SKIP() << "llama.cpp's architecture fixtures are not here: set CRIA_ARCH_FIXTURES or place "
                        "../shared/testdata/arch-fixtures beside the checkout";
    std::signal(SIGPIPE, SIG_IGN);
    std::ifstream in(dir / "qwen3moe-moe.json");
    const json fixture = json::parse(in);
    const size_t prefill = fixture["prefill"].get<size_t>();
    const auto tokens = fixture["tokens"].get<std::vector<int>>();
    const std::vector<int> prompt(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(prefill));
    const auto llama_row = fixture["logits_prefill_all"][prefill - 1].get<std::vector<double>>();

    const auto path = (dir / "qwen3moe-moe.gguf").string();
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 0;  // the model's training context (128)
    bp.n_threads = 2;
    bp.type_k = cria::ElementType::F32;
    bp.type_v = cria::ElementType::F32;
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    Server server(std::make_unique<RuntimeBackend>(path, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(30, 0);

    const json body = {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 1}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json out = json::parse(r->body);
    EXPECT_EQ(out["usage"]["prompt_tokens"], static_cast<int>(prefill)) << r->body;
    EXPECT_EQ(out["usage"]["completion_tokens"], 4) << r->body;
    EXPECT_EQ(out["choices"][0]["finish_reason"], "length") << r->body;
    const json& lp = out["choices"][0]["logprobs"]["token_logprobs"];
    ASSERT_EQ(lp.size(), 4u) << r->body;
    EXPECT_NEAR(lp[0].get<double>(), best_logprob(llama_row), 1e-3) << "the first token is not llama.cpp's best";

    // A token id beyond the model's logit rows is the client's error, not a crash.
    const json bad = {{"prompt", {1, 128}}, {"max_tokens", 1}};
    auto b = c.Post("/v1/completions", bad.dump(), "application/json");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, 400) << b->body;
    server.stop();
}

TEST(HttpMoeServer, NgramSpeculationKeepsTheGreedyCompletion) {
    const std::filesystem::path dir = cria::test::arch_fixtures_dir();
    if (dir.empty())
        GTEST_SKIP() << "llama.cpp's architecture fixtures are not here: set CRIA_ARCH_FIXTURES or place "
                        "../shared/testdata/arch-fixtures beside the checkout";
    std::signal(SIGPIPE, SIG_IGN);
    std::ifstream in(dir / "qwen3moe-moe.json");
    const auto tokens = json::parse(in)["tokens"].get<std::vector<int>>();
    // The first 20 tokens twice: the repetition gives the ngram drafter matches.
    std::vector<int> prompt(tokens.begin(), tokens.begin() + 20);
    prompt.insert(prompt.end(), tokens.begin(), tokens.begin() + 20);

    const auto path = (dir / "qwen3moe-moe.gguf").string();
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 0;
    bp.n_threads = 2;
    bp.type_k = cria::ElementType::F32;
    bp.type_v = cria::ElementType::F32;
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    config.scheduler.speculative.types = {cria::spec::SpecType::NgramSimple};
    config.scheduler.speculative.adaptive = false;
    config.scheduler.speculative.ngram_simple.size_n = 2;
    config.scheduler.speculative.ngram_simple.size_m = 6;
    Server server(std::make_unique<RuntimeBackend>(path, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(30, 0);

    json body = {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}, {"logprobs", 0}};
    json off = body;
    off["speculative"] = {{"type", "none"}};
    auto plain = c.Post("/v1/completions", off.dump(), "application/json");
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200) << plain->body;
    auto spec = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(spec);
    ASSERT_EQ(spec->status, 200) << spec->body;
    const json p = json::parse(plain->body), s = json::parse(spec->body);
    EXPECT_GT(s["timings"]["draft_n"].get<int>(), 0) << spec->body;
    const json& lp_plain = p["choices"][0]["logprobs"]["token_logprobs"];
    const json& lp_spec = s["choices"][0]["logprobs"]["token_logprobs"];
    ASSERT_EQ(lp_plain.size(), 40u);
    ASSERT_EQ(lp_spec.size(), 40u);
    for (size_t i = 0; i < 40; ++i)
        EXPECT_NEAR(lp_spec[i].get<double>(), lp_plain[i].get<double>(), 1e-4) << "token " << i;
    std::printf("[ spec     ] qwen3moe-moe on the server: %d drafted, %d accepted\n", s["timings"]["draft_n"].get<int>(),
                s["timings"]["draft_n_accepted"].get<int>());
    server.stop();
}

}  // namespace
