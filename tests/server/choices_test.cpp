// n > 1 choices in /v1/chat/completions and /v1/completions: one choice per
// index, streaming and not; choice i samples with seed + i (its own stream,
// the reply an n = 1 request with that seed gets); the prompt is evaluated
// once and its cache cells are shared by the other choices.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <map>
#include <nlohmann/json.hpp>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

class Choices : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::signal(SIGPIPE, SIG_IGN);
        RuntimeBackendParams bp;
        bp.n_seq = 4;
        bp.n_ctx = 4 * 512;
        bp.n_threads = 2;
        const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
        ServerConfig config;
        config.port = 0;
        config.model_path = path;
        config.scheduler.n_slots = 4;
        server_ = new Server(std::make_unique<RuntimeBackend>(path, bp), config);
        server_->start();
    }
    static void TearDownTestSuite() { delete server_; }

    static httplib::Result post(const std::string& path, const json& body) {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(60, 0);
        return c.Post(path, body.dump(), "application/json");
    }
    static json post_ok(const std::string& path, const json& body) {
        auto r = post(path, body);
        EXPECT_TRUE(r);
        if (!r) return {};
        EXPECT_EQ(r->status, 200) << r->body;
        return json::parse(r->body);
    }
    // The SSE payloads of a streamed reply, and the text per choice index.
    static std::vector<std::string> sse(const std::string& body) {
        std::vector<std::string> out;
        size_t pos = 0;
        while ((pos = body.find("data: ", pos)) != std::string::npos) {
            const size_t end = body.find("\n\n", pos);
            out.push_back(body.substr(pos + 6, end - pos - 6));
            pos = end;
        }
        return out;
    }
    static Server* server_;
};
Server* Choices::server_ = nullptr;

json chat_body(const std::string& content, int n, uint32_t seed, bool stream = false) {
    return {{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 24}, {"temperature", 1.0},
            {"top_k", 0}, {"top_p", 1.0}, {"min_p", 0.0}, {"seed", seed}, {"n", n}, {"stream", stream}};
}

}  // namespace

TEST_F(Choices, ChatChoicesAreTheRepliesOfSeedsPlusIndex) {
    const json many = post_ok("/v1/chat/completions", chat_body("Once upon a time", 3, 7));
    ASSERT_EQ(many["choices"].size(), 3u) << many.dump();
    int completion = 0;
    std::vector<std::string> texts;
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(many["choices"][i]["index"], i);
        EXPECT_FALSE(many["choices"][i]["finish_reason"].is_null());
        texts.push_back(many["choices"][i]["message"]["content"].get<std::string>());
        // The same as an n = 1 request with seed 7 + i.
        const json one = post_ok("/v1/chat/completions", chat_body("Once upon a time", 1, 7 + i));
        EXPECT_EQ(one["choices"][0]["message"]["content"], texts.back()) << "choice " << i;
        completion += one["usage"]["completion_tokens"].get<int>();
    }
    EXPECT_NE(texts[0], texts[1]);  // its own stream each (temperature 1, 24 tokens)
    EXPECT_EQ(many["usage"]["completion_tokens"], completion);
    EXPECT_EQ(many["usage"]["prompt_tokens"], post_ok("/v1/chat/completions", chat_body("Once upon a time", 1, 7))["usage"]["prompt_tokens"]);
}

TEST_F(Choices, ThePromptIsEvaluatedOnceAndItsCellsShared) {
    const std::string prompt = "The little dog ran to the big red barn and saw a cat on the roof";
    const auto before = server_->scheduler().stats();
    const json many = post_ok("/v1/chat/completions", chat_body(prompt, 3, 11));
    const auto after = server_->scheduler().stats();
    const int64_t n_prompt = many["usage"]["prompt_tokens"].get<int64_t>();
    ASSERT_GT(n_prompt, 10);
    // Three requests, but the prompt was evaluated by one: the other two took all but its last token from the cache.
    EXPECT_EQ(after.requests_total - before.requests_total, 3u);
    EXPECT_GE(static_cast<int64_t>(after.cached_tokens_total - before.cached_tokens_total), 2 * (n_prompt - 1));
    EXPECT_LE(static_cast<int64_t>(after.prompt_tokens_total - before.prompt_tokens_total), 3 * n_prompt);
}

TEST_F(Choices, StreamedChatChoicesCarryTheirIndexAndEndOnce) {
    const json whole = post_ok("/v1/chat/completions", chat_body("Once upon a time", 2, 21));
    auto r = post("/v1/chat/completions", chat_body("Once upon a time", 2, 21, true));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    std::map<int, std::string> text;
    std::map<int, int> finishes;
    int done = 0;
    for (const auto& payload : sse(r->body)) {
        if (payload == "[DONE]") {
            ++done;
            continue;
        }
        ASSERT_EQ(done, 0) << "data after [DONE]";
        const json chunk = json::parse(payload);
        for (const auto& c : chunk["choices"]) {
            const int i = c["index"].get<int>();
            if (c["delta"].contains("content") && c["delta"]["content"].is_string()) text[i] += c["delta"]["content"].get<std::string>();
            if (!c["finish_reason"].is_null()) ++finishes[i];
        }
    }
    EXPECT_EQ(done, 1);
    EXPECT_EQ(finishes, (std::map<int, int>{{0, 1}, {1, 1}}));
    EXPECT_EQ(text[0], whole["choices"][0]["message"]["content"]);
    EXPECT_EQ(text[1], whole["choices"][1]["message"]["content"]);
}

TEST_F(Choices, CompletionChoicesStreamedAndNot) {
    const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 1.0}, {"top_k", 0},
                       {"top_p", 1.0}, {"min_p", 0.0}, {"seed", 3}, {"n", 2}};
    const json whole = post_ok("/v1/completions", body);
    ASSERT_EQ(whole["choices"].size(), 2u);
    EXPECT_EQ(whole["choices"][1]["index"], 1);
    json one = body;
    one["n"] = 1;
    one["seed"] = 4;
    EXPECT_EQ(post_ok("/v1/completions", one)["choices"][0]["text"], whole["choices"][1]["text"]);
    json streamed = body;
    streamed["stream"] = true;
    streamed["stream_options"] = {{"include_usage", true}};
    auto r = post("/v1/completions", streamed);
    ASSERT_TRUE(r);
    std::map<int, std::string> text;
    int usage_chunks = 0, done = 0;
    for (const auto& payload : sse(r->body)) {
        if (payload == "[DONE]") {
            ++done;
            continue;
        }
        const json chunk = json::parse(payload);
        if (chunk.contains("usage")) {
            ++usage_chunks;
            EXPECT_EQ(chunk["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
        }
        for (const auto& c : chunk["choices"]) text[c["index"].get<int>()] += c["text"].get<std::string>();
    }
    EXPECT_EQ(done, 1);
    EXPECT_EQ(usage_chunks, 1);
    EXPECT_EQ(text[0], whole["choices"][0]["text"]);
    EXPECT_EQ(text[1], whole["choices"][1]["text"]);
}

TEST_F(Choices, OutOfRangeNIsA400) {
    for (int n : {0, 17}) {
        auto r = post("/v1/chat/completions", chat_body("Hi", n, 1));
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << n;
        EXPECT_EQ(json::parse(r->body)["error"]["param"], "n");
    }
}
