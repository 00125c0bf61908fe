// The HTTP server over loopback with stories260K: every route's happy path,
// the error shapes, auth, limits, SSE framing, and slots freed after a
// client disconnects mid-stream.
#include <gtest/gtest.h>

#include <cctype>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

class HttpServer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::signal(SIGPIPE, SIG_IGN);
        slot_dir_ = new std::filesystem::path(cria::test::temp_dir() / "slots");
        std::filesystem::create_directories(*slot_dir_);
        RuntimeBackendParams bp;
        bp.n_seq = 2;
        bp.n_ctx = 4096;
        bp.n_threads = 2;
        const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
        ServerConfig config;
        config.port = 0;
        config.api_key = "test-key";
        config.model_path = path;
        config.slot_save_path = slot_dir_->string();
        config.metrics = true;
        config.max_body_bytes = 64 * 1024;
        config.scheduler.n_slots = 2;
        config.scheduler.max_queue = 4;
        server_ = new Server(std::make_unique<RuntimeBackend>(path, bp), config);
        server_->start();
    }
    static void TearDownTestSuite() {
        delete server_;
        delete slot_dir_;
    }

    httplib::Client client(bool with_key = true) {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(30, 0);
        if (with_key) c.set_bearer_token_auth("test-key");
        return c;
    }
    httplib::Result post(const std::string& path, const std::string& body, bool with_key = true) {
        return client(with_key).Post(path.c_str(), body, "application/json");
    }
    static bool all_slots_free(httplib::Client& c) {
        for (int i = 0; i < 200; ++i) {  // bounded: 10 s
            auto r = c.Get("/slots");
            if (r && r->status == 200) {
                bool busy = false;
                for (const auto& s : json::parse(r->body)) busy = busy || s["is_processing"].get<bool>();
                if (!busy) return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

    void hang_up_during_a_whole_reply(const std::string& path, const std::string& body);

    static Server* server_;
    static std::filesystem::path* slot_dir_;
};
Server* HttpServer::server_ = nullptr;
std::filesystem::path* HttpServer::slot_dir_ = nullptr;

const char* kChat = R"({"model":"stories260K.gguf","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":12,"temperature":0})";

// Splits an SSE body into its data payloads, checking the framing.
std::vector<std::string> sse_data(const std::string& body, std::vector<std::string>* events = nullptr) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
        const size_t end = body.find("\n\n", pos);
        EXPECT_NE(end, std::string::npos) << "unterminated event";
        if (end == std::string::npos) break;
        std::string block = body.substr(pos, end - pos);
        pos = end + 2;
        std::string data, event;
        size_t lp = 0;
        while (lp <= block.size()) {
            size_t nl = block.find('\n', lp);
            if (nl == std::string::npos) nl = block.size();
            const std::string line = block.substr(lp, nl - lp);
            if (line.rfind("data: ", 0) == 0) data += line.substr(6);
            else if (line.rfind("event: ", 0) == 0) event = line.substr(7);
            else ADD_FAILURE() << "unexpected SSE line: " << line;
            lp = nl + 1;
        }
        out.push_back(data);
        if (events) events->push_back(event);
    }
    return out;
}

}  // namespace

TEST_F(HttpServer, HealthIsOpenEverythingElseNeedsTheKey) {
    auto c = client(false);
    auto h = c.Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    auto m = c.Get("/v1/models");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 401);
    // HEAD is answered like GET: the open page is open to both.
    EXPECT_EQ(c.Get("/")->status, 200);
    EXPECT_EQ(c.Head("/")->status, 200);
    EXPECT_EQ(c.Head("/v1/models")->status, 401);
    EXPECT_TRUE(json::parse(m->body)["error"].contains("message"));
    auto a = post("/v1/messages", "{}", false);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 401);
    EXPECT_EQ(json::parse(a->body)["error"]["type"], "authentication_error");
    httplib::Headers x = {{"x-api-key", "test-key"}};
    auto ok = c.Get("/v1/models", x);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(json::parse(ok->body)["data"][0]["id"], "stories260K.gguf");
    httplib::Headers wrong = {{"Authorization", "Bearer test-kez"}};
    EXPECT_EQ(c.Get("/props", wrong)->status, 401);
    // The scheme is case-insensitive (RFC 7235); the key is not.
    for (const char* scheme : {"bearer", "BEARER", "BeArEr"}) {
        httplib::Headers h = {{"Authorization", std::string(scheme) + " test-key"}};
        EXPECT_EQ(c.Get("/props", h)->status, 200) << scheme;
    }
    httplib::Headers upper_key = {{"Authorization", "Bearer TEST-KEY"}};
    EXPECT_EQ(c.Get("/props", upper_key)->status, 401);
    EXPECT_EQ(c.Get("/props", httplib::Headers{{"Authorization", "Bearer"}})->status, 401);
}

TEST_F(HttpServer, TokenIdsAreRangeCheckedBeforeNarrowing) {
    // 4294967301 = 2^32 + 5 used to wrap to token 5 and be accepted.
    for (const char* prompt : {"[4294967301]", "[-1]", "[1, 512]", "[18446744073709551615]"}) {
        auto r = post("/v1/completions", std::string(R"({"max_tokens":2,"prompt":)") + prompt + "}");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << prompt << ": " << r->body;
    }
    auto logprobs = post("/v1/completions", R"({"max_tokens":2,"prompt":"x","logprobs":4294967301})");
    EXPECT_EQ(logprobs->status, 400);
    EXPECT_EQ(post("/v1/completions", R"({"max_tokens":2,"prompt":[1, 511]})")->status, 200);
}

TEST_F(HttpServer, ChatCompletionIsDeterministicAtTemperatureZero) {
    auto r1 = post("/v1/chat/completions", kChat);
    auto r2 = post("/v1/chat/completions", kChat);
    ASSERT_TRUE(r1 && r2);
    ASSERT_EQ(r1->status, 200) << r1->body;
    const auto j1 = json::parse(r1->body), j2 = json::parse(r2->body);
    EXPECT_EQ(j1["object"], "chat.completion");
    EXPECT_EQ(j1["choices"][0]["message"]["role"], "assistant");
    EXPECT_FALSE(j1["choices"][0]["message"]["content"].get<std::string>().empty());
    EXPECT_EQ(j1["choices"][0]["message"]["content"], j2["choices"][0]["message"]["content"]);
    EXPECT_EQ(j1["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j1["usage"]["completion_tokens"], 12);
    EXPECT_GT(j2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

TEST_F(HttpServer, ChatStreamFramesChunksUsageAndDone) {
    json body = json::parse(kChat);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto r = post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    auto data = sse_data(r->body);
    ASSERT_GE(data.size(), 4u);
    EXPECT_EQ(data.back(), "[DONE]");
    std::string text;
    for (size_t i = 0; i + 2 < data.size(); ++i) {
        auto j = json::parse(data[i]);
        EXPECT_EQ(j["object"], "chat.completion.chunk");
        if (j["choices"][0]["delta"].contains("content")) text += j["choices"][0]["delta"]["content"].get<std::string>();
    }
    auto usage = json::parse(data[data.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 12);
    auto last = json::parse(data[data.size() - 3]);
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
    // Streaming and not streaming give the same text.
    auto whole = json::parse(post("/v1/chat/completions", kChat)->body);
    EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
}

TEST_F(HttpServer, AnthropicMessagesAndStreamEvents) {
    const char* body = R"({"model":"stories260K","max_tokens":6,"temperature":0,"messages":[{"role":"user","content":"Hi"}]})";
    auto r = post("/v1/messages", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    auto j = json::parse(r->body);
    EXPECT_EQ(j["type"], "message");
    EXPECT_EQ(j["content"][0]["type"], "text");
    EXPECT_EQ(j["stop_reason"], "max_tokens");
    EXPECT_EQ(j["usage"]["output_tokens"], 6);
    json sb = json::parse(body);
    sb["stream"] = true;
    auto s = post("/v1/messages", sb.dump());
    ASSERT_TRUE(s);
    std::vector<std::string> events;
    auto data = sse_data(s->body, &events);
    ASSERT_GE(events.size(), 6u);
    EXPECT_EQ(events.front(), "message_start");
    EXPECT_EQ(events.back(), "message_stop");
    std::string text;
    for (size_t i = 0; i < data.size(); ++i) {
        auto e = json::parse(data[i]);
        EXPECT_EQ(e["type"], events[i]);
        if (events[i] == "content_block_delta") text += e["delta"]["text"].get<std::string>();
    }
    EXPECT_EQ(text, j["content"][0]["text"]);
}

TEST_F(HttpServer, ForcedToolCallAndJsonSchema) {
    const char* tools = R"({"model":"stories260K.gguf","max_tokens":200,"temperature":0,
      "messages":[{"role":"user","content":"Weather?"}],
      "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string","enum":["Paris","Rome"]}},"required":["city"]}}}],
      "tool_choice":"required"})";
    auto r = post("/v1/chat/completions", tools);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    auto j = json::parse(r->body);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << r->body;
    auto call = j["choices"][0]["message"]["tool_calls"][0];
    EXPECT_EQ(call["function"]["name"], "get_weather");
    auto args = json::parse(call["function"]["arguments"].get<std::string>());
    EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Rome");
    const char* schema = R"({"max_tokens":100,"temperature":0,"messages":[{"role":"user","content":"JSON"}],
      "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object",
        "properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}})";
    auto s = post("/v1/chat/completions", schema);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->status, 200) << s->body;
    auto content = json::parse(json::parse(s->body)["choices"][0]["message"]["content"].get<std::string>());
    EXPECT_TRUE(content["ok"].is_boolean());
}

// llama.cpp's request extensions: a GBNF grammar or a JSON Schema for the output.
TEST_F(HttpServer, GrammarAndJsonSchemaFields) {
    auto g = post("/v1/completions",
                  R"({"prompt":"Once upon a time","max_tokens":8,"temperature":1,"seed":4,"grammar":"root ::= (\"yes\" | \"no\") \".\""})");
    ASSERT_TRUE(g);
    ASSERT_EQ(g->status, 200) << g->body;
    const std::string text = json::parse(g->body)["choices"][0]["text"].get<std::string>();
    EXPECT_TRUE(text == "yes." || text == "no.") << text;

    auto s = post("/v1/completions",
                  R"({"prompt":"x","max_tokens":40,"temperature":0,"json_schema":{"type":"integer","minimum":1,"maximum":9}})");
    ASSERT_TRUE(s);
    ASSERT_EQ(s->status, 200) << s->body;
    std::string number = json::parse(s->body)["choices"][0]["text"].get<std::string>();
    while (!number.empty() && std::isspace(static_cast<unsigned char>(number.back()))) number.pop_back();  // schema grammars end in optional space
    ASSERT_EQ(number.size(), 1u) << number;
    EXPECT_TRUE(number[0] >= '1' && number[0] <= '9') << number;

    auto bad = post("/v1/completions", R"({"prompt":"x","grammar":"root ::= ("})");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("grammar"), std::string::npos) << bad->body;
    auto both = post("/v1/completions", R"({"prompt":"x","grammar":"root ::= \"a\"","json_schema":{}})");
    ASSERT_TRUE(both);
    EXPECT_EQ(both->status, 400);
}

TEST_F(HttpServer, CompletionsTokenizeDetokenizeTemplateEmbeddings) {
    auto c = post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":5,"temperature":0,"logprobs":2})");
    ASSERT_TRUE(c);
    ASSERT_EQ(c->status, 200) << c->body;
    auto cj = json::parse(c->body);
    EXPECT_EQ(cj["object"], "text_completion");
    EXPECT_EQ(cj["choices"][0]["logprobs"]["tokens"].size(), 5u);
    auto t = post("/tokenize", R"({"content":"Once upon a time"})");
    ASSERT_TRUE(t);
    auto tokens = json::parse(t->body)["tokens"];
    EXPECT_FALSE(tokens.empty());
    auto d = post("/detokenize", json{{"tokens", tokens}}.dump());
    ASSERT_TRUE(d);
    EXPECT_EQ(json::parse(d->body)["content"], "Once upon a time");
    EXPECT_EQ(post("/detokenize", R"({"tokens":[999999]})")->status, 400);
    auto a = post("/apply-template", R"({"messages":[{"role":"user","content":"hi"}]})");
    ASSERT_TRUE(a);
    EXPECT_EQ(json::parse(a->body)["prompt"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    auto e = post("/v1/embeddings", R"({"input":["hello","world"]})");
    ASSERT_TRUE(e);
    ASSERT_EQ(e->status, 200) << e->body;
    auto ej = json::parse(e->body);
    ASSERT_EQ(ej["data"].size(), 2u);
    double norm = 0;
    for (double v : ej["data"][0]["embedding"]) norm += v * v;
    EXPECT_NEAR(norm, 1.0, 1e-4);
    EXPECT_NE(ej["data"][0]["embedding"], ej["data"][1]["embedding"]);
    auto b64 = post("/v1/embeddings", R"({"input":"hello","encoding_format":"base64"})");
    EXPECT_EQ(json::parse(b64->body)["data"][0]["embedding"].get<std::string>().size(), (64 * 4 + 2) / 3 * 4);
}

TEST_F(HttpServer, ErrorsHaveTheApisShapeAndStatus) {
    auto bad = post("/v1/chat/completions", "{not json");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_EQ(json::parse(bad->body)["error"]["type"], "invalid_request_error");
    auto type = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"ten"})");
    EXPECT_EQ(type->status, 400);
    EXPECT_EQ(json::parse(type->body)["error"]["param"], "max_tokens");
    auto model = client().Get("/v1/models/gpt-9");
    EXPECT_EQ(model->status, 404);
    EXPECT_EQ(json::parse(model->body)["error"]["code"], "model_not_found");
    auto big = post("/v1/chat/completions", std::string(70 * 1024, ' '));
    ASSERT_TRUE(big);
    EXPECT_EQ(big->status, 413);
    EXPECT_TRUE(json::parse(big->body).contains("error"));
    auto abig = post("/v1/messages", std::string(70 * 1024, ' '));
    EXPECT_EQ(json::parse(abig->body)["type"], "error");
    auto long_prompt = post("/v1/completions", json{{"prompt", std::string(5000, 'x')}}.dump());
    EXPECT_EQ(long_prompt->status, 400);
    auto none = client().Get("/v1/nothing");
    EXPECT_EQ(none->status, 404);
    EXPECT_TRUE(json::parse(none->body).contains("error"));
    // The server is still fine.
    EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);
}

TEST_F(HttpServer, SlotsSaveRestoreEraseAndRejectTraversal) {
    ASSERT_EQ(post("/v1/chat/completions", kChat)->status, 200);
    for (const char* name : {"../evil", "/etc/passwd", ".hidden", "a/b", ""}) {
        auto r = post("/slots/0?action=save", json{{"filename", name}}.dump());
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << name;
    }
    EXPECT_FALSE(std::filesystem::exists(slot_dir_->parent_path() / "evil"));
    auto save = post("/slots/0?action=save", R"({"filename":"s0.bin"})");
    ASSERT_EQ(save->status, 200) << save->body;
    EXPECT_GT(json::parse(save->body)["n_saved"].get<int>(), 0);
    EXPECT_TRUE(std::filesystem::exists(*slot_dir_ / "s0.bin"));
    auto restore = post("/slots/1?action=restore", R"({"filename":"s0.bin"})");
    ASSERT_EQ(restore->status, 200) << restore->body;
    EXPECT_EQ(json::parse(restore->body)["n_restored"], json::parse(save->body)["n_saved"]);
    EXPECT_EQ(post("/slots/1?action=restore", R"({"filename":"missing.bin"})")->status, 404);
    // A damaged file is a clear 400 and leaves the slot as it was.
    auto n_cached = [&](int id) { return json::parse(client().Get("/slots")->body)[id]["n_cached"].get<int>(); };
    const int held = n_cached(1);
    EXPECT_EQ(held, json::parse(save->body)["n_saved"].get<int>());
    std::filesystem::resize_file(*slot_dir_ / "s0.bin", std::filesystem::file_size(*slot_dir_ / "s0.bin") - 5);
    auto damaged = post("/slots/1?action=restore", R"({"filename":"s0.bin"})");
    ASSERT_TRUE(damaged);
    EXPECT_EQ(damaged->status, 400);
    EXPECT_NE(json::parse(damaged->body)["error"]["message"].get<std::string>().find("truncated"), std::string::npos)
        << damaged->body;
    EXPECT_EQ(n_cached(1), held);
    EXPECT_EQ(post("/slots/0?action=erase", "")->status, 200);
    EXPECT_EQ(post("/slots/9?action=erase", "")->status, 400);
    EXPECT_EQ(post("/slots/0?action=dance", "{}")->status, 400);
}

TEST_F(HttpServer, MetricsArePrometheusText) {
    ASSERT_EQ(post("/v1/chat/completions", kChat)->status, 200);
    auto m = client().Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 200);
    EXPECT_NE(m->body.find("# TYPE cria:tokens_predicted_total counter\ncria:tokens_predicted_total "), std::string::npos);
    EXPECT_NE(m->body.find("cria:requests_processing "), std::string::npos);
    auto props = json::parse(client().Get("/props")->body);
    EXPECT_EQ(props["total_slots"], 2);
}

TEST_F(HttpServer, DisconnectMidStreamFreesTheSlot) {
    // A raw socket: send a streaming request for many tokens, read a little, hang up.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string body = R"({"messages":[{"role":"user","content":"Tell a story"}],"max_tokens":1900,"ignore_eos":true,"stream":true,"temperature":1,"seed":3})";
    const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-key\r\n"
                            "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    const auto before = server_->scheduler().stats();
    // Read until some generated text arrived, so the request holds a slot.
    std::string got;
    char buf[512];
    while (got.find("\"content\":\"") == std::string::npos || got.find("\"content\":\"\"") == got.rfind("\"content\":\"")) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        ASSERT_GT(n, 0);
        got.append(buf, static_cast<size_t>(n));
        ASSERT_LT(got.size(), 100000u);
    }
    ::close(fd);
    for (int i = 0; i < 200 && server_->scheduler().stats().requests_cancelled == before.requests_cancelled; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto after = server_->scheduler().stats();
    EXPECT_EQ(after.requests_cancelled, before.requests_cancelled + 1);
    EXPECT_LT(after.generated_tokens_total - before.generated_tokens_total, 1900u);
    auto c = client();
    EXPECT_TRUE(all_slots_free(c));
}

// A client sends a long non-streaming request to `path` and hangs up once it generates.
void HttpServer::hang_up_during_a_whole_reply(const std::string& path, const std::string& body) {
    // A non-streaming reply writes nothing until the end, so no failed write
    // can reveal that the client left: the server must watch its socket.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-key\r\n"
                            "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    const auto before = server_->scheduler().stats();
    ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    // Hang up once the request holds a slot and generates (bounded wait: 20 s).
    bool generating = false;
    for (int i = 0; i < 20000 && !generating; ++i) {
        for (const auto& s : server_->scheduler().slots()) generating = generating || (s.busy && s.n_generated > 0);
        if (!generating) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(generating);
    ::close(fd);
    // The slot is free again within a second of the hang-up (observed as
    // clients see it: /slots), and the request counts as cancelled.
    const auto hung_up = std::chrono::steady_clock::now();
    auto c = client();
    bool freed = false;
    while (!freed && std::chrono::steady_clock::now() - hung_up < std::chrono::seconds(5)) {
        auto r = c.Get("/slots");
        ASSERT_TRUE(r);
        freed = true;
        for (const auto& slot : json::parse(r->body)) freed = freed && !slot["is_processing"].get<bool>();
        if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - hung_up);
    EXPECT_TRUE(freed);
    EXPECT_LT(took.count(), 1000) << "the slot was freed " << took.count() << " ms after the client hung up";
    for (int i = 0; i < 200 && server_->scheduler().stats().requests_cancelled == before.requests_cancelled; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto after = server_->scheduler().stats();
    EXPECT_EQ(after.requests_cancelled, before.requests_cancelled + 1);
    EXPECT_EQ(after.requests_success, before.requests_success);  // it did not run to max_tokens
    EXPECT_LT(after.generated_tokens_total - before.generated_tokens_total, 1900u);
}

TEST_F(HttpServer, DisconnectWhileWaitingForAWholeReplyFreesTheSlot) {
    hang_up_during_a_whole_reply("/v1/chat/completions",
        R"({"messages":[{"role":"user","content":"Tell a long story"}],"max_tokens":1900,"ignore_eos":true,"temperature":1,"seed":5})");
}

TEST_F(HttpServer, DisconnectWhileWaitingForAWholeCompletionFreesTheSlot) {
    hang_up_during_a_whole_reply("/v1/completions",
        R"({"prompt":"Once upon a time","max_tokens":1900,"ignore_eos":true,"temperature":1,"seed":5})");
}

namespace {

// A raw connection with one request written to it (the caller closes it).
int send_raw(int port, const std::string& body) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-key\r\n"
                            "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

TEST_F(HttpServer, QueuedStreamingClientThatHangsUpLeavesTheQueue) {
    // Both slots busy with long replies, a streaming request waits in the
    // queue (nothing is written to it yet) and its client hangs up.
    const std::string long_reply = R"({"messages":[{"role":"user","content":"Tell a long story"}],"max_tokens":1900,"ignore_eos":true,"temperature":1,"seed":7})";
    const int busy1 = send_raw(server_->port(), long_reply), busy2 = send_raw(server_->port(), long_reply);
    ASSERT_GE(busy1, 0);
    ASSERT_GE(busy2, 0);
    auto both_busy = [&] {
        int n = 0;
        for (const auto& s : server_->scheduler().slots()) n += s.busy ? 1 : 0;
        return n == 2;
    };
    for (int i = 0; i < 20000 && !both_busy(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(both_busy());
    const auto before = server_->scheduler().stats();
    const int queued = send_raw(server_->port(), R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":50,"stream":true})");
    ASSERT_GE(queued, 0);
    for (int i = 0; i < 20000 && server_->scheduler().stats().queue_size == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(server_->scheduler().stats().queue_size, 1);
    ::close(queued);
    // It leaves the queue while the slots are still busy: it never got one.
    for (int i = 0; i < 20000 && server_->scheduler().stats().queue_size != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto after = server_->scheduler().stats();
    EXPECT_EQ(after.queue_size, 0);
    EXPECT_EQ(after.requests_cancelled, before.requests_cancelled + 1);
    EXPECT_EQ(after.slots_busy, 2);
    ::close(busy1);
    ::close(busy2);
    auto c = client();
    EXPECT_TRUE(all_slots_free(c));
}

TEST_F(HttpServer, SpeculationOnAServerWithoutDrafterIs400) {
    auto r = post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"x"}],"max_tokens":4,"speculative.n_max":8})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("speculative decoding is off"),
              std::string::npos) << r->body;
    // Turning it off is fine anywhere.
    EXPECT_EQ(post("/v1/completions", R"({"prompt":"Once","max_tokens":2,"speculative":{"n_max":0}})")->status, 200);
    auto m = client().Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("\ncria:spec_tokens_drafted_total 0\n"), std::string::npos);
    EXPECT_NE(m->body.find("\ncria:spec_acceptance_rate 0\n"), std::string::npos);
}

TEST(HttpSpeculativeServer, ReportsDraftsInTimingsAndMetrics) {
    std::signal(SIGPIPE, SIG_IGN);
    const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_threads = 2;
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    config.metrics = true;
    config.scheduler.speculative.types = {cria::spec::SpecType::NgramSimple};
    config.scheduler.speculative.ngram_simple.size_n = 2;
    config.scheduler.speculative.ngram_simple.size_m = 6;
    Server server(std::make_unique<RuntimeBackend>(path, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(30, 0);
    const std::string body = R"({"prompt":"Once upon a time, there was a cat. The cat was","max_tokens":60,"temperature":0})";
    json off = json::parse(body);
    off["speculative"] = {{"type", "none"}};
    auto plain = c.Post("/v1/completions", off.dump(), "application/json");
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200) << plain->body;
    EXPECT_FALSE(json::parse(plain->body)["timings"].contains("draft_n"));
    auto r = c.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json out = json::parse(r->body);
    EXPECT_EQ(out["choices"][0]["text"], json::parse(plain->body)["choices"][0]["text"]);
    const int drafted = out["timings"]["draft_n"].get<int>();
    const int accepted = out["timings"]["draft_n_accepted"].get<int>();
    EXPECT_GT(drafted, 0);
    EXPECT_GT(accepted, 0);
    EXPECT_LE(accepted, drafted);
    // Per request: a type the server does not draft with is refused.
    auto wrong = c.Post("/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"x"}],"speculative":{"type":"draft"}})", "application/json");
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 400);
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("\ncria:spec_tokens_drafted_total " + std::to_string(drafted) + "\n"), std::string::npos)
        << m->body;
    EXPECT_NE(m->body.find("\ncria:spec_tokens_accepted_total " + std::to_string(accepted) + "\n"), std::string::npos);
    EXPECT_NE(m->body.find("\ncria:spec_verify_steps_total "), std::string::npos);
    server.stop();
}

// Per-request control over a server drafting with ngram-simple and a draft
// model (the target itself: greedy drafts it makes are all accepted).
TEST(HttpSpeculativeServer, PerRequestControlAndPositionMetrics) {
    std::signal(SIGPIPE, SIG_IGN);
    const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_threads = 2;
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    config.metrics = true;
    auto& spec = config.scheduler.speculative;
    spec.types = {cria::spec::SpecType::NgramSimple};
    spec.ngram_simple.size_n = 2;
    spec.ngram_simple.size_m = 6;
    spec.draft_model = path;
    spec.draft.p_min = 0.0f;
    spec.n_max = spec.draft.n_max = 8;
    spec.adaptive = false;  // every step drafts: the counts below do not depend on timings
    Server server(std::make_unique<RuntimeBackend>(path, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(30, 0);
    const json base = json::parse(R"({"prompt":"Once upon a time, there was a cat. The cat was","max_tokens":40,"temperature":0})");
    auto post = [&](const json& speculative) {
        json body = base;
        body["speculative"] = speculative;
        auto r = c.Post("/v1/completions", body.dump(), "application/json");
        EXPECT_TRUE(r);
        return r;
    };
    int64_t position0_drafted = 0, position0_accepted = 0;
    // Positions add up to the totals; position 0 is tried by every verify step.
    auto check_positions = [&](const json& t) {
        const auto tried = t["draft_n_per_position"].get<std::vector<int64_t>>();
        const auto accepted = t["draft_n_accepted_per_position"].get<std::vector<int64_t>>();
        EXPECT_EQ(tried.size(), accepted.size());
        EXPECT_EQ(t["draft_acceptance_per_position"].size(), tried.size());
        // A position is tried when the drafts before it were accepted (llama.cpp's count).
        int64_t sum_accepted = 0;
        for (size_t i = 0; i < tried.size(); ++i) {
            sum_accepted += accepted[i];
            EXPECT_LE(accepted[i], tried[i]);
            if (i > 0) {
                EXPECT_LE(tried[i], tried[i - 1]);
            }
        }
        EXPECT_LE(static_cast<int64_t>(tried.size()), t["draft_n"].get<int64_t>());
        EXPECT_EQ(sum_accepted, t["draft_n_accepted"].get<int64_t>());
        EXPECT_EQ(tried.at(0), t["draft_n_steps"].get<int64_t>());
        const double steps = t["draft_n_steps"].get<double>();
        EXPECT_DOUBLE_EQ(t["draft_mean_acceptance_length"].get<double>(),
                         (t["draft_n_accepted"].get<double>() + steps) / steps);
        position0_drafted += tried[0];
        position0_accepted += accepted[0];
        return tried;
    };

    auto plain = post(false);
    ASSERT_EQ(plain->status, 200) << plain->body;
    const json plain_out = json::parse(plain->body);
    EXPECT_FALSE(plain_out["timings"].contains("draft_n")) << "\"speculative\": false drafts nothing";
    const auto text = plain_out["choices"][0]["text"];

    // n_max per request: no draft longer than 2 (the server's is 8).
    auto short_drafts = post({{"type", "draft"}, {"n_max", 2}});
    ASSERT_EQ(short_drafts->status, 200) << short_drafts->body;
    json t = json::parse(short_drafts->body)["timings"];
    EXPECT_EQ(json::parse(short_drafts->body)["choices"][0]["text"], text);
    EXPECT_EQ(check_positions(t).size(), 2u);
    EXPECT_EQ(t["draft_n_accepted"], t["draft_n"]) << "the draft model is the target: greedy drafts all pass";

    // The server's n_max with p_min 0: drafts reach past position 2.
    auto long_drafts = post({{"type", "draft"}, {"p_min", 0.0}});
    ASSERT_EQ(long_drafts->status, 200) << long_drafts->body;
    EXPECT_GT(check_positions(json::parse(long_drafts->body)["timings"]).size(), 2u);

    // p_min per request: at 1 the draft model stops after its first token
    // (as llama.cpp, the token below p_min is still proposed).
    auto confident = post({{"type", "draft"}, {"p_min", 1.0}});
    ASSERT_EQ(confident->status, 200) << confident->body;
    EXPECT_EQ(json::parse(confident->body)["choices"][0]["text"], text);
    EXPECT_EQ(check_positions(json::parse(confident->body)["timings"]).size(), 1u);

    // n_min per request: ngram-simple drafts at most size_m = 6 tokens, so
    // with n_min 7 no draft is long enough to verify, but at the very end
    // (the floor is capped by the tokens the request may still get).
    auto too_short = post({{"type", "ngram-simple"}, {"n_min", 7}});
    ASSERT_EQ(too_short->status, 200) << too_short->body;
    t = json::parse(too_short->body)["timings"];
    if (t.contains("draft_n")) {
        EXPECT_LE(t["draft_n_steps"].get<int>(), 1) << too_short->body;
        check_positions(t);
    }
    auto ngram = post({{"type", "ngram-simple"}, {"n_min", 1}});
    ASSERT_EQ(ngram->status, 200) << ngram->body;
    EXPECT_EQ(json::parse(ngram->body)["choices"][0]["text"], text);
    EXPECT_GT(check_positions(json::parse(ngram->body)["timings"]).at(0), 1);

    // Refusals name what is wrong.
    auto refused = [&](const json& speculative, const std::string& named) {
        auto r = post(speculative);
        ASSERT_EQ(r->status, 400) << r->body;
        EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find(named), std::string::npos)
            << r->body;
    };
    refused({{"type", "bogus"}}, "bogus");
    refused({{"type", "draft-eagle3"}}, "draft-eagle3");
    refused({{"n_max", 2}, {"n_min", 3}}, "n_min");
    refused({{"p_min", 1.5}}, "p_min");
    refused("yes", "speculative");

    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("\ncria:spec_position_drafted_total{position=\"0\"} " + std::to_string(position0_drafted) + "\n"),
              std::string::npos) << m->body;
    EXPECT_NE(m->body.find("\ncria:spec_position_accepted_total{position=\"0\"} " + std::to_string(position0_accepted) + "\n"),
              std::string::npos) << m->body;
    EXPECT_NE(m->body.find("\ncria:spec_mean_acceptance_length "), std::string::npos);
    server.stop();
}

TEST_F(HttpServer, ConcurrentStreamsAllFinish) {
    // The queue takes 4 beyond the idle slots: a slot the previous test's
    // request has not yet released would turn the sixth request away.
    auto idle = client();
    ASSERT_TRUE(all_slots_free(idle));
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 6; ++i) {
        threads.emplace_back([&, i] {
            httplib::Client c("127.0.0.1", server_->port());
            c.set_bearer_token_auth("test-key");
            c.set_read_timeout(30, 0);
            json body = {{"messages", {{{"role", "user"}, {"content", "Story " + std::to_string(i)}}}},
                         {"max_tokens", 20}, {"stream", true}, {"seed", i}};
            auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
            if (r && r->status == 200 && r->body.find("data: [DONE]\n\n") != std::string::npos) ++ok;
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 6);  // 2 slots + a queue of 4
    auto c = client();
    EXPECT_TRUE(all_slots_free(c));
}

TEST_F(HttpServer, DeeplyNestedJsonIs400WithTheLimitNotACrash) {
    // Every path where request JSON reaches a recursive reader (templates,
    // schemas, tool definitions and call arguments): 4000 levels used to
    // overflow the stack; now each is a 400 naming the limit.
    const auto deep = [](int levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); };
    const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/v1/chat/completions", "{" + msgs + R"(,"chat_template_kwargs":{"a":)" + deep(4000) + "}}"},
        {"/v1/chat/completions", "{" + msgs + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)" +
                                     std::string(2000, ' ') + deep(4000) + "}}}"},
        {"/v1/chat/completions",
         "{" + msgs + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":{"p":)" + deep(4000) + "}}}]}"},
        {"/v1/messages/count_tokens",
         R"({"model":"m",)" + msgs + R"(,"tools":[{"name":"f","input_schema":{"p":)" + deep(4000) + "}}]}"},
        {"/apply-template", "{" + msgs + R"(,"x":)" + deep(4000) + "}"},
        {"/v1/chat/completions",
         R"({"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":)" +
             json(deep(4000)).dump() + "}}]},{\"role\":\"user\",\"content\":\"x\"}]}"},
    };
    for (const auto& [path, body] : cases) {
        auto r = post(path, body);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 400) << path << ": " << r->body.substr(0, 200);
        EXPECT_NE(r->body.find("128 levels"), std::string::npos) << path << ": " << r->body.substr(0, 300);
    }
    // At the limit the JSON is read: a body nested exactly 128 levels deep
    // (the body object, chat_template_kwargs, 126 arrays); one more is refused.
    auto at_limit = post("/apply-template", "{" + msgs + R"(,"chat_template_kwargs":{"a":)" + deep(126) + "}}");
    ASSERT_TRUE(at_limit);
    EXPECT_EQ(at_limit->status, 200) << at_limit->body.substr(0, 300);
    auto past = post("/apply-template", "{" + msgs + R"(,"chat_template_kwargs":{"a":)" + deep(127) + "}}");
    EXPECT_EQ(past->status, 400);
    EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);  // the server is still fine
}

TEST_F(HttpServer, SamplingFailuresCausedByTheRequestAre400) {
    // A logit bias of -1e308 on every token leaves nothing to sample: the
    // request's fault, so a 400 with the reason, not a 500.
    json bias = json::object();
    for (int t = 0; t < 512; ++t) bias[std::to_string(t)] = -1e308;
    json body = json::parse(kChat);
    body["logit_bias"] = bias;
    body["temperature"] = 0.8;
    auto r = post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body.substr(0, 300);
    EXPECT_NE(r->body.find("sampling failed"), std::string::npos) << r->body.substr(0, 300);
    EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);
}

TEST_F(HttpServer, NonJsonBodiesAre415BeforeTheyAreRead) {
    // A 20 KB form body used to meet the HTTP library's 8 KB form limit (a
    // 413 naming 8 MiB); every route takes JSON only.
    auto form = client().Post("/v1/chat/completions", std::string(20 * 1024, 'a'), "application/x-www-form-urlencoded");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->status, 415);
    EXPECT_NE(form->body.find("application/json"), std::string::npos);
    EXPECT_EQ(client().Post("/v1/chat/completions", kChat, "text/plain")->status, 415);
    EXPECT_EQ(client().Post("/v1/chat/completions", kChat, "application/json; charset=utf-8")->status, 200);
}

TEST_F(HttpServer, EmbeddingInputsLongerThanTheModelTakesAre400) {
    // An input over one micro-batch (512) is embedded; one longer than the
    // model takes at once (stories260K: its 2048-token training context) is
    // the request's fault, a 400 naming the limit (no longer a 501).
    json ids = json::array();
    for (int i = 0; i < 2100; ++i) ids.push_back(1 + i % 100);
    auto r = post("/v1/embeddings", json{{"input", ids}}.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_NE(r->body.find("2048"), std::string::npos) << r->body;
    ids.erase(ids.begin() + 600, ids.end());
    auto over_a_ubatch = post("/v1/embeddings", json{{"input", ids}}.dump());
    ASSERT_TRUE(over_a_ubatch);
    EXPECT_EQ(over_a_ubatch->status, 200);
    EXPECT_EQ(json::parse(over_a_ubatch->body)["usage"]["prompt_tokens"], 600);
}

TEST(HttpKeylessServer, RefusesOtherWebOriginsForeignHostsAndNonJsonBodies) {
    // Without --api-key a page on another site must not drive the server:
    // a cross-origin request is 403, a DNS-rebound Host is 403, a text/plain
    // POST (no preflight needed) is 415; our own page, plain clients and the
    // one --cors-origin work.
    std::signal(SIGPIPE, SIG_IGN);
    const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
    RuntimeBackendParams bp;
    bp.n_ctx = 256;
    bp.n_threads = 1;
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    config.cors_origin = "https://app.example";
    Server server(std::make_unique<RuntimeBackend>(path, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    const std::string ours = "http://127.0.0.1:" + std::to_string(server.port());
    const std::string body = R"({"prompt":"Once","max_tokens":2,"temperature":0})";

    auto plain = c.Post("/v1/completions", body, "application/json");  // an SDK: no Origin
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->status, 200);
    auto evil = c.Post("/v1/completions", {{"Origin", "https://evil.example"}}, body, "application/json");
    EXPECT_EQ(evil->status, 403) << evil->body;
    EXPECT_EQ(c.Get("/v1/models", {{"Origin", "null"}})->status, 403);
    auto text = c.Post("/v1/completions", body, "text/plain");
    EXPECT_EQ(text->status, 415);
    EXPECT_EQ(c.Post("/slots/0?action=erase", {{"Origin", "https://evil.example"}}, "x", "application/x-www-form-urlencoded")->status, 403);
    auto rebound = c.Get("/v1/models", {{"Host", "attacker.example:" + std::to_string(server.port())}});
    EXPECT_EQ(rebound->status, 403);

    auto page = c.Post("/v1/completions", {{"Origin", ours}}, body, "application/json");
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->get_header_value("Access-Control-Allow-Origin"), ours);
    auto localhost = c.Get("/v1/models", {{"Origin", "http://localhost:" + std::to_string(server.port())}});
    EXPECT_EQ(localhost->status, 200);
    auto allowed = c.Get("/v1/models", {{"Origin", "https://app.example"}});
    EXPECT_EQ(allowed->status, 200);
    auto preflight = c.Options("/v1/chat/completions", {{"Origin", "https://app.example"},
                                                        {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(preflight);
    EXPECT_EQ(preflight->status, 204);
    EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
    server.stop();
}

namespace {

// Sends raw request headers (and a few body bytes) and returns the status
// line the server answers within 5 s ("" when it does not).
std::string raw_status(int port, const std::string& headers) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return "";
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer test-key\r\n"
                                "Content-Type: application/json\r\n" + headers + "\r\n{}";
        ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
        char buf[256];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) reply.assign(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return reply.substr(0, reply.find("\r\n"));
}

}  // namespace

TEST_F(HttpServer, BodiesThatCannotBeBoundedAreRefusedFromTheirHeaders) {
    // These used to hold a thread with no answer (a Content-Length the body
    // never reaches), or be read past --max-body (chunked, gzip).
    EXPECT_EQ(raw_status(server_->port(), "Content-Length: 9223372036854775808\r\n"), "HTTP/1.1 413 Payload Too Large");
    EXPECT_EQ(raw_status(server_->port(), "Content-Length: -5\r\n"), "HTTP/1.1 400 Bad Request");
    EXPECT_EQ(raw_status(server_->port(), "Content-Length: 99999999999999999999\r\n"), "HTTP/1.1 400 Bad Request");
    EXPECT_EQ(raw_status(server_->port(), "Content-Length: 10000000\r\n"), "HTTP/1.1 413 Payload Too Large");
    EXPECT_EQ(raw_status(server_->port(), "Transfer-Encoding: chunked\r\n"), "HTTP/1.1 411 Length Required");
    EXPECT_EQ(raw_status(server_->port(), "Content-Encoding: gzip\r\nContent-Length: 2\r\n"),
              "HTTP/1.1 415 Unsupported Media Type");
    EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);
}
