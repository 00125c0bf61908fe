// Model names with one model loaded, as llama-server serves them: any
// "model" a request names is served, --alias sets the names /v1/models
// lists (sorted, unique), and the first of them names the model in replies.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

std::unique_ptr<Server> make_server(std::vector<std::string> aliases) {
    std::signal(SIGPIPE, SIG_IGN);
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_threads = 1;
    const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    config.model_aliases = std::move(aliases);
    auto server = std::make_unique<Server>(std::make_unique<RuntimeBackend>(path, bp), config);
    server->start();
    return server;
}

json get(Server& s, const std::string& path, int expected_status = 200) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(30, 0);
    auto r = c.Get(path);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, expected_status) << r->body;
    return json::parse(r->body);
}

json post(Server& s, const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(30, 0);
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
}

}  // namespace

TEST(ModelNames, AnyRequestedNameIsServedUnderTheFilesName) {
    auto server = make_server({});
    const json models = get(*server, "/v1/models");
    ASSERT_EQ(models["data"].size(), 1u);
    EXPECT_EQ(models["data"][0]["id"], "stories260K.gguf");
    const json chat = post(*server, "/v1/chat/completions",
                           {{"model", "gpt-4o"}, {"max_tokens", 3}, {"temperature", 0},
                            {"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
    EXPECT_EQ(chat["model"], "stories260K.gguf");
    const json msg = post(*server, "/v1/messages",
                          {{"model", "claude-sonnet-4-5"}, {"max_tokens", 3}, {"temperature", 0},
                           {"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
    EXPECT_EQ(msg["model"], "stories260K.gguf");
    const json cmpl = post(*server, "/v1/completions", {{"model", "davinci"}, {"prompt", "Once"}, {"max_tokens", 2}});
    EXPECT_EQ(cmpl["model"], "stories260K.gguf");
    const json emb = post(*server, "/v1/embeddings", {{"model", "text-embedding-3-small"}, {"input", "hi"}});
    // llama-server's embeddings (and rerank) replies echo the request's name
    // (format_embeddings_response_oaicompat: json_value(request, "model", ...)).
    EXPECT_EQ(emb["model"], "text-embedding-3-small");
    // Looking a model up by name still says which names exist.
    EXPECT_EQ(get(*server, "/v1/models/stories260K")["id"], "stories260K");
    EXPECT_EQ(get(*server, "/v1/models/gpt-4o", 404)["error"]["code"], "model_not_found");
}

TEST(ModelNames, AliasesAreListedSortedAndTheFirstNamesReplies) {
    auto server = make_server({"zeta", "alpha", "zeta", "mid"});
    const json models = get(*server, "/v1/models");
    ASSERT_EQ(models["data"].size(), 3u);
    EXPECT_EQ(models["data"][0]["id"], "alpha");
    EXPECT_EQ(models["data"][1]["id"], "mid");
    EXPECT_EQ(models["data"][2]["id"], "zeta");
    EXPECT_EQ(get(*server, "/models")["data"].size(), 3u);
    const json chat = post(*server, "/v1/chat/completions",
                           {{"model", "zeta"}, {"max_tokens", 2}, {"temperature", 0},
                            {"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
    EXPECT_EQ(chat["model"], "alpha");
    EXPECT_EQ(get(*server, "/v1/models/mid")["id"], "mid");
    EXPECT_EQ(get(*server, "/props")["model_alias"], "alpha");
}
