// llama-server's native completion API (POST /completion, /completions) over
// loopback with stories260K: the reply fields, the SSE stream ending with a
// stop object (no [DONE]), token-id and listed prompts, the n_predict limit,
// stop words, and llama-server's error shape for bad input.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

class NativeCompletion : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::signal(SIGPIPE, SIG_IGN);
        RuntimeBackendParams bp;
        bp.n_seq = 2;
        bp.n_ctx = 1024;
        bp.n_threads = 1;
        const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
        ServerConfig config;
        config.port = 0;
        config.model_path = path;
        config.scheduler.n_slots = 2;
        server_ = new Server(std::make_unique<RuntimeBackend>(path, bp), config);
        server_->start();
    }
    static void TearDownTestSuite() { delete server_; }

    static httplib::Result post(const std::string& path, const json& body) {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(30, 0);
        return c.Post(path.c_str(), body.dump(), "application/json");
    }
    // Greedy, so every request with the same prompt continues identically.
    static json greedy(json body) {
        body["temperature"] = 0;
        return body;
    }
    // The JSON objects of an SSE body ("data: {...}" lines).
    static std::vector<json> events(const std::string& body) {
        std::vector<json> out;
        std::istringstream in(body);
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("data: ", 0) != 0) continue;
            EXPECT_NE(line, "data: [DONE]") << "the native stream has no [DONE]";
            out.push_back(json::parse(line.substr(6)));
        }
        return out;
    }

    static Server* server_;
};
Server* NativeCompletion::server_ = nullptr;

TEST_F(NativeCompletion, ReplyHasLlamaServerFields) {
    auto r = post("/completion", greedy({{"prompt", "Once upon a time"}, {"n_predict", 8}}));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    EXPECT_TRUE(j["content"].is_string());
    EXPECT_FALSE(j["content"].get<std::string>().empty());
    EXPECT_EQ(j["stop"], true);
    EXPECT_EQ(j["tokens"], json::array());  // no return_tokens
    EXPECT_EQ(j["tokens_predicted"], 8);
    EXPECT_GT(j["tokens_evaluated"].get<int>(), 1);
    // The prompt as llama-server shows it: the BOS as its text, then the words.
    EXPECT_EQ(j["prompt"].get<std::string>().find("<s>"), 0u) << j["prompt"];
    EXPECT_NE(j["prompt"].get<std::string>().find("Once upon a time"), std::string::npos) << j["prompt"];
    EXPECT_EQ(j["stop_type"], "limit");
    EXPECT_EQ(j["stopping_word"], "");
    EXPECT_GE(j["id_slot"].get<int>(), 0);
    EXPECT_EQ(j["generation_settings"]["n_predict"], 8);
    EXPECT_EQ(j["generation_settings"]["temperature"], 0.0);
    EXPECT_EQ(j["has_new_line"].get<bool>(), j["content"].get<std::string>().find('\n') != std::string::npos);
    EXPECT_EQ(j["timings"]["predicted_n"], 8);
    EXPECT_EQ(j["truncated"], false);
    // The slot keeps the prompt and every generated token but the last (sampled, never decoded).
    EXPECT_EQ(j["tokens_cached"].get<int>(), j["tokens_evaluated"].get<int>() + 8 - 1);
    EXPECT_TRUE(j.contains("model"));
    // /completions is the same native API; /v1/completions stays OpenAI's.
    auto same = post("/completions", greedy({{"prompt", "Once upon a time"}, {"n_predict", 8}}));
    ASSERT_TRUE(same);
    EXPECT_EQ(json::parse(same->body)["content"], j["content"]);
    auto oai = post("/v1/completions", greedy({{"prompt", "Once upon a time"}, {"max_tokens", 8}}));
    ASSERT_TRUE(oai);
    const json o = json::parse(oai->body);
    EXPECT_EQ(o["object"], "text_completion");
    EXPECT_EQ(o["choices"][0]["text"], j["content"]);
}

TEST_F(NativeCompletion, StreamEndsWithStopObject) {
    const json body = greedy({{"prompt", "Once upon a time"}, {"n_predict", 6}});
    auto whole = post("/completion", body);
    ASSERT_TRUE(whole);
    json streamed_body = body;
    streamed_body["stream"] = true;
    auto r = post("/completion", streamed_body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto ev = events(r->body);
    ASSERT_GE(ev.size(), 2u);
    std::string text;
    for (size_t i = 0; i + 1 < ev.size(); ++i) {
        EXPECT_EQ(ev[i]["stop"], false);
        text += ev[i]["content"].get<std::string>();
    }
    const json& last = ev.back();
    EXPECT_EQ(last["stop"], true);
    EXPECT_EQ(last["content"], "");
    EXPECT_EQ(last["stop_type"], "limit");
    EXPECT_EQ(last["tokens_predicted"], 6);
    EXPECT_TRUE(last.contains("timings"));
    EXPECT_TRUE(last.contains("generation_settings"));
    EXPECT_EQ(text, json::parse(whole->body)["content"].get<std::string>());
}

TEST_F(NativeCompletion, StreamOfSeveralPromptsByIndex) {
    const json ids = json::array({1, 403, 407});
    auto whole = post("/completion", greedy({{"prompt", ids}, {"n_predict", 4}, {"return_tokens", true}}));
    ASSERT_TRUE(whole);
    const json one = json::parse(whole->body);
    auto r = post("/completion", greedy({{"prompt", json::array({ids, ids})},
                                         {"n_predict", 4},
                                         {"stream", true},
                                         {"return_tokens", true}}));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string text[2];
    json tokens[2] = {json::array(), json::array()};
    int finals[2] = {0, 0};
    for (const json& e : events(r->body)) {
        const int i = e["index"];
        ASSERT_TRUE(i == 0 || i == 1);
        if (e["stop"].get<bool>()) {
            ++finals[i];
            EXPECT_EQ(e["stop_type"], "limit");
            continue;
        }
        EXPECT_EQ(e["tokens_evaluated"], 3);
        text[i] += e["content"].get<std::string>();
        for (const auto& t : e["tokens"]) tokens[i].push_back(t);
    }
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(finals[i], 1);
        EXPECT_EQ(text[i], one["content"].get<std::string>());
        EXPECT_EQ(tokens[i], one["tokens"]);
    }
}

TEST_F(NativeCompletion, TokenIdPromptsAndReturnTokens) {
    // The text prompt's ids give the same continuation as the text.
    httplib::Client c("127.0.0.1", server_->port());
    auto tok = c.Post("/tokenize", R"({"content":"Once upon a time","add_special":true})", "application/json");
    ASSERT_TRUE(tok);
    const json ids = json::parse(tok->body)["tokens"];
    auto by_text = post("/completion", greedy({{"prompt", "Once upon a time"}, {"n_predict", 5}}));
    auto by_ids = post("/completion", greedy({{"prompt", ids}, {"n_predict", 5}, {"return_tokens", true}}));
    ASSERT_TRUE(by_text && by_ids);
    ASSERT_EQ(by_ids->status, 200) << by_ids->body;
    const json a = json::parse(by_text->body), b = json::parse(by_ids->body);
    EXPECT_EQ(a["content"], b["content"]);
    ASSERT_EQ(b["tokens"].size(), 5u);
    // The returned ids spell the content.
    auto detok = c.Post("/detokenize", json{{"tokens", b["tokens"]}}.dump(), "application/json");
    ASSERT_TRUE(detok);
    EXPECT_EQ(json::parse(detok->body)["content"], b["content"]);
    // A mixed list is one prompt; a list of prompts gives a list of results.
    json mixed = json::array({ids[0]});
    mixed.push_back("Once upon a time");
    auto m = post("/completion", greedy({{"prompt", mixed}, {"n_predict", 5}}));
    ASSERT_TRUE(m);
    EXPECT_TRUE(json::parse(m->body).is_object()) << m->body;
    auto many = post("/completion", greedy({{"prompt", json::array({"Once upon a time", ids})}, {"n_predict", 5}}));
    ASSERT_TRUE(many);
    const json list = json::parse(many->body);
    ASSERT_TRUE(list.is_array()) << many->body;
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0]["index"], 0);
    EXPECT_EQ(list[1]["index"], 1);
    EXPECT_EQ(list[0]["content"], a["content"]);
    EXPECT_EQ(list[1]["content"], a["content"]);
}

TEST_F(NativeCompletion, StopWordReported) {
    auto free_run = post("/completion", greedy({{"prompt", "Once upon a time"}, {"n_predict", 24}}));
    ASSERT_TRUE(free_run);
    const std::string text = json::parse(free_run->body)["content"];
    ASSERT_GT(text.size(), 8u);
    // A word from the middle of the greedy text ends the same request there.
    const std::string word = text.substr(text.size() / 2, 3);
    auto r = post("/completion", greedy({{"prompt", "Once upon a time"}, {"n_predict", 24}, {"stop", {word}}}));
    ASSERT_TRUE(r);
    const json j = json::parse(r->body);
    EXPECT_EQ(j["stop_type"], "word");
    EXPECT_EQ(j["stopping_word"], word);
    EXPECT_EQ(j["content"], text.substr(0, text.find(word)));
}

TEST_F(NativeCompletion, BadInputIsA400InLlamaServerShape) {
    for (const json& body : {json{{"n_predict", 2}},                                  // no prompt
                             json{{"prompt", json::array({1, -3})}},                 // bad id
                             json{{"prompt", 7.5}},                                  // not a prompt
                             json{{"prompt", "x"}, {"n_predict", "many"}},           // wrong type
                             json{{"prompt", "x"}, {"stream", "yes"}},
                             json{{"prompt", "x"}, {"n_probs", 99}},
                             json{{"prompt", "x"}, {"cache_prompt", 1}}}) {
        auto r = post("/completion", body);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << body.dump();
        const json j = json::parse(r->body);
        ASSERT_TRUE(j.contains("error")) << r->body;
        EXPECT_EQ(j["error"]["code"], 400);
        EXPECT_EQ(j["error"]["type"], "invalid_request_error");
        EXPECT_TRUE(j["error"]["message"].is_string());
    }
}

TEST_F(NativeCompletion, ProbabilitiesWhenAsked) {
    auto r = post("/completion", greedy({{"prompt", "Once upon a time"}, {"n_predict", 3}, {"n_probs", 2}}));
    ASSERT_TRUE(r);
    const json j = json::parse(r->body);
    ASSERT_EQ(j["completion_probabilities"].size(), 3u) << r->body;
    EXPECT_EQ(j["completion_probabilities"][0]["top_logprobs"].size(), 2u);
    EXPECT_TRUE(j["completion_probabilities"][0].contains("id"));
}

}  // namespace
