// Router mode over HTTP: two tiny models behind one server, selected by the
// request's "model", loaded on first use, switched back and forth under
// --models-max 1, listed with their load state, loaded and unloaded by
// POST /models/load|unload; unknown names are 404s in each API's shape.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <fstream>
#include <map>
#include <future>
#include <thread>
#include <atomic>
#include <nlohmann/json.hpp>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

std::unique_ptr<Server> make_router(size_t max_loaded) {
    std::signal(SIGPIPE, SIG_IGN);
    RouterConfig rc;
    rc.models = {{"stories", cria::test::model_path("stories260K/stories260K.gguf").string(), {"gpt-4o"}, -1, -1},
                 {"austen", cria::test::model_path("austen-1m/austen-1m-f16.gguf").string(), {}, -1, -1}};
    rc.make_backend = [](const ModelEntry& e) -> std::unique_ptr<Backend> {
        RuntimeBackendParams bp;
        bp.n_seq = 1;
        bp.n_ctx = 256;
        bp.n_threads = 1;
        return std::make_unique<RuntimeBackend>(e.path, bp);
    };
    rc.limits.max_loaded = max_loaded;
    ServerConfig config;
    config.port = 0;
    auto server = std::make_unique<Server>(std::move(rc), config);
    server->start();
    return server;
}

struct Reply {
    int status = 0;
    json body;
};

Reply send(Server& s, const std::string& method, const std::string& path, const json& body = {}) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(30, 0);
    auto r = method == "GET" ? c.Get(path) : c.Post(path, body.dump(), "application/json");
    if (!r) {
        ADD_FAILURE() << "no reply to " << method << " " << path;
        return {};
    }
    return {r->status, json::parse(r->body, nullptr, false)};
}

std::map<std::string, std::string> states(Server& s) {
    std::map<std::string, std::string> out;
    const Reply list = send(s, "GET", "/models");
    for (const auto& m : list.body["data"]) out[m["id"]] = m["status"]["value"];
    return out;
}

json completion(const std::string& model) {
    return {{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}};
}

}  // namespace

TEST(RouterHttp, ModelsAreListedWithTheirLoadState) {
    auto s = make_router(4);
    const Reply list = send(*s, "GET", "/v1/models");
    ASSERT_EQ(list.status, 200);
    ASSERT_EQ(list.body["data"].size(), 2u);
    EXPECT_EQ(list.body["data"][0]["id"], "stories");
    EXPECT_EQ(list.body["data"][0]["aliases"], json::array({"gpt-4o"}));
    EXPECT_EQ(states(*s), (std::map<std::string, std::string>{{"austen", "unloaded"}, {"stories", "unloaded"}}));
    // The first request loads its model; the reply names it as listed.
    const Reply r = send(*s, "POST", "/v1/completions", completion("gpt-4o"));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["model"], "stories");
    EXPECT_EQ(states(*s)["stories"], "loaded");
    EXPECT_EQ(states(*s)["austen"], "unloaded");
    EXPECT_EQ(send(*s, "GET", "/v1/models/austen-1m-f16.gguf").body["status"]["value"], "unloaded");
    EXPECT_EQ(send(*s, "GET", "/health?model=stories").body["model_status"]["value"], "loaded");
}

TEST(RouterHttp, SwitchingBackAndForthGivesEachModelsOwnReplies) {
    auto s = make_router(1);
    const Reply a1 = send(*s, "POST", "/v1/completions", completion("stories"));
    const Reply b1 = send(*s, "POST", "/v1/completions", completion("austen"));
    EXPECT_EQ(states(*s), (std::map<std::string, std::string>{{"austen", "loaded"}, {"stories", "unloaded"}}));
    const Reply a2 = send(*s, "POST", "/v1/completions", completion("stories260K.gguf"));
    EXPECT_EQ(states(*s), (std::map<std::string, std::string>{{"austen", "unloaded"}, {"stories", "loaded"}}));
    ASSERT_EQ(a1.status, 200);
    ASSERT_EQ(b1.status, 200);
    ASSERT_EQ(a2.status, 200);
    EXPECT_EQ(b1.body["model"], "austen");
    EXPECT_EQ(a1.body["choices"][0]["text"], a2.body["choices"][0]["text"]);  // greedy, reloaded: the same
    EXPECT_NE(a1.body["choices"][0]["text"], b1.body["choices"][0]["text"]);  // two models, two texts
    // Chat, Anthropic messages and the tokenizer route by "model" too.
    const json chat = {{"model", "austen"}, {"max_tokens", 3}, {"temperature", 0},
                       {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
    EXPECT_EQ(send(*s, "POST", "/v1/chat/completions", chat).body["model"], "austen");
    EXPECT_EQ(send(*s, "POST", "/v1/messages", chat).body["model"], "austen");
    const Reply tok_a = send(*s, "POST", "/tokenize", {{"model", "stories"}, {"content", "Once upon"}});
    const Reply tok_b = send(*s, "POST", "/tokenize", {{"model", "austen"}, {"content", "Once upon"}});
    EXPECT_NE(tok_a.body["tokens"], tok_b.body["tokens"]);  // two vocabularies
    EXPECT_EQ(send(*s, "GET", "/slots?model=austen").status, 200);
    EXPECT_EQ(send(*s, "GET", "/props?model=austen").body["model_alias"], "austen");
    EXPECT_EQ(send(*s, "GET", "/props").body["role"], "router");
}

TEST(RouterHttp, LoadAndUnloadByName) {
    auto s = make_router(4);
    EXPECT_EQ(send(*s, "POST", "/models/load", {{"model", "austen"}}).body["success"], true);
    EXPECT_EQ(states(*s)["austen"], "loaded");
    EXPECT_EQ(send(*s, "POST", "/models/unload", {{"model", "austen"}}).body["success"], true);
    EXPECT_EQ(states(*s)["austen"], "unloaded");
    EXPECT_EQ(send(*s, "POST", "/models/unload", {{"model", "austen"}}).status, 400);  // not loaded
    EXPECT_EQ(send(*s, "POST", "/models/load", {{"model", "nope"}}).status, 404);
    // A streamed reply keeps its model until it ends; then it can go.
    httplib::Client c("127.0.0.1", s->port());
    json streamed = completion("stories");
    streamed["stream"] = true;
    auto r = c.Post("/v1/completions", streamed.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("[DONE]"), std::string::npos);
    EXPECT_EQ(send(*s, "POST", "/models/unload", {{"model", "stories"}}).status, 200);
    // A request after an unload loads the model again.
    EXPECT_EQ(send(*s, "POST", "/v1/completions", completion("stories")).status, 200);
    EXPECT_EQ(states(*s)["stories"], "loaded");
}

TEST(RouterHttp, UnknownOrMissingModelsAreRefusedInEachApisShape) {
    auto s = make_router(4);
    const Reply openai = send(*s, "POST", "/v1/chat/completions",
                              {{"model", "gpt-9"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
    EXPECT_EQ(openai.status, 404);
    EXPECT_EQ(openai.body["error"]["code"], "model_not_found");
    EXPECT_NE(openai.body["error"]["message"].get<std::string>().find("gpt-9"), std::string::npos);
    const Reply anthropic = send(*s, "POST", "/v1/messages",
                                 {{"model", "claude-9"}, {"max_tokens", 3}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
    EXPECT_EQ(anthropic.status, 404);
    EXPECT_EQ(anthropic.body["type"], "error");
    EXPECT_EQ(send(*s, "GET", "/v1/models/gpt-9").status, 404);
    const Reply missing = send(*s, "POST", "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}});
    EXPECT_EQ(missing.status, 400);
    EXPECT_EQ(missing.body["error"]["param"], "model");
    EXPECT_EQ(states(*s), (std::map<std::string, std::string>{{"austen", "unloaded"}, {"stories", "unloaded"}}));
}

TEST(RouterHttp, AFileThatDoesNotLoadIsReportedAsFailed) {
    const auto bad = cria::test::temp_dir() / "not-a-model.gguf";
    { std::ofstream(bad) << "this is no GGUF file"; }
    RouterConfig rc;
    rc.models = {{"broken", bad.string(), {}, -1, -1}};
    rc.make_backend = [](const ModelEntry& e) -> std::unique_ptr<Backend> {
        return std::make_unique<RuntimeBackend>(e.path, RuntimeBackendParams{});
    };
    ServerConfig config;
    config.port = 0;
    Server s(std::move(rc), config);
    s.start();
    const Reply r = send(s, "POST", "/v1/completions", completion("broken"));
    EXPECT_EQ(r.status, 500);
    const json model = send(s, "GET", "/models").body["data"][0];
    EXPECT_EQ(model["status"]["value"], "unloaded");
    EXPECT_EQ(model["status"]["failed"], true);
    EXPECT_FALSE(model["status"]["error"].get<std::string>().empty());
}

TEST(RouterHttp, OneModelServersHaveNoLoadOrUnload) {
    std::signal(SIGPIPE, SIG_IGN);
    RuntimeBackendParams bp;
    bp.n_ctx = 256;
    bp.n_threads = 1;
    const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    Server s(std::make_unique<RuntimeBackend>(path, bp), config);
    s.start();
    EXPECT_EQ(send(s, "POST", "/models/load", {{"model", "x"}}).status, 501);
    EXPECT_EQ(send(s, "GET", "/models").body["data"][0]["id"], "stories260K.gguf");
}

TEST(RouterHttp, RequestsForALoadingModelWaitOrTimeOut) {
    std::signal(SIGPIPE, SIG_IGN);
    std::atomic<int> loads{0};
    // A slow load: it ends when `gate` opens (or after 400 ms without one),
    // so a wait for it times out whatever the machine's load.
    auto make = [&](std::chrono::milliseconds load_timeout, std::shared_future<void> gate = {}) {
        RouterConfig rc;
        rc.models = {{"stories", cria::test::model_path("stories260K/stories260K.gguf").string(), {}, -1, -1}};
        rc.make_backend = [&loads, gate](const ModelEntry& e) -> std::unique_ptr<Backend> {
            ++loads;
            if (gate.valid()) gate.wait();
            else std::this_thread::sleep_for(std::chrono::milliseconds(400));
            RuntimeBackendParams bp;
            bp.n_ctx = 256;
            bp.n_threads = 1;
            return std::make_unique<RuntimeBackend>(e.path, bp);
        };
        rc.limits.load_timeout = load_timeout;
        ServerConfig config;
        config.port = 0;
        auto s = std::make_unique<Server>(std::move(rc), config);
        s->start();
        return s;
    };
    {
        auto s = make(std::chrono::seconds(30));
        auto first = std::async(std::launch::async, [&] { return send(*s, "POST", "/v1/completions", completion("stories")); });
        while (states(*s)["stories"] != "loading") std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const Reply second = send(*s, "POST", "/v1/completions", completion("stories"));
        EXPECT_EQ(first.get().status, 200);
        EXPECT_EQ(second.status, 200);
        EXPECT_EQ(loads, 1);  // one load served both
    }
    {
        std::promise<void> loaded;
        auto s = make(std::chrono::milliseconds(100), loaded.get_future().share());
        auto first = std::async(std::launch::async, [&] { return send(*s, "POST", "/v1/completions", completion("stories")); });
        while (states(*s)["stories"] != "loading") std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const Reply second = send(*s, "POST", "/v1/completions", completion("stories"));
        loaded.set_value();
        EXPECT_EQ(second.status, 504);
        EXPECT_EQ(first.get().status, 200);
    }
}

TEST(RouterHttp, AModelThatWouldNotFitInMemoryIsRefusedWith503) {
    std::signal(SIGPIPE, SIG_IGN);
    RouterConfig rc;
    rc.models = {{"stories", cria::test::model_path("stories260K/stories260K.gguf").string(), {}, -1, -1}};
    rc.make_backend = [](const ModelEntry& e) -> std::unique_ptr<Backend> {
        RuntimeBackendParams bp;
        bp.n_ctx = 256;
        bp.n_threads = 1;
        return std::make_unique<RuntimeBackend>(e.path, bp);
    };
    rc.estimate = [](const ModelEntry& e) { return estimate_model_bytes(e, 256, 1); };
    rc.available = [] { return uint64_t(1000); };  // a machine with 1000 bytes free
    ServerConfig config;
    config.port = 0;
    Server s(std::move(rc), config);
    s.start();
    const Reply r = send(s, "POST", "/v1/completions", completion("stories"));
    EXPECT_EQ(r.status, 503);
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("MiB"), std::string::npos) << r.body;
    EXPECT_EQ(states(s)["stories"], "unloaded");
}
