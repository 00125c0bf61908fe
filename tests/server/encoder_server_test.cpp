// Embeddings and reranking with a bert encoder in the server: /v1/embeddings
// takes a string, strings and token arrays and answers in OpenAI's shape
// (float and base64), its vectors equal the runtime's pooled, L2-normalised
// embedding; /v1/rerank (and its aliases) orders the documents by the
// classifier's score, cut at top_n, with llama-server's shapes (TEI's with
// "texts"); completions are refused with 501 on an encoder; llama-server's
// details: embd_normalize, special tokens parsed, per-token rows not
// normalised, "content" answered in its own shape, model names echoed.
#include <gtest/gtest.h>

#include <httplib.h>

#include <cmath>
#include <csignal>
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/embedding.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

std::string encoder_file(bool reranker) {
    const auto dir = cria::test::temp_dir() / "encoder-server";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / (reranker ? "reranker.gguf" : "embedder.gguf")).string();
    cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("bert");
    spec.stddev = 0.08f;
    spec.pooling_type = reranker ? 4 : 1;  // rank, mean
    spec.classifier_head = reranker;
    cria::model::write_synthetic_model(spec, path);
    return path;
}

struct Running {
    explicit Running(const std::string& path, RuntimeBackendParams bp = {}) {
        std::signal(SIGPIPE, SIG_IGN);
        ServerConfig config;
        config.port = 0;
        config.model_path = path;
        config.scheduler.n_slots = 1;
        bp.n_threads = 2;
        server = std::make_unique<Server>(std::make_unique<RuntimeBackend>(path, bp), config);
        server->start();
        client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
        client->set_read_timeout(30, 0);
    }
    httplib::Result post(const std::string& path, const json& body) {
        return client->Post(path.c_str(), body.dump(), "application/json");
    }
    std::unique_ptr<Server> server;
    std::unique_ptr<httplib::Client> client;
};

std::vector<float> as_floats(const json& v) { return v.get<std::vector<float>>(); }

TEST(EncoderServer, EmbeddingsInEveryInputForm) {
    const std::string path = encoder_file(false);
    Running s(path);
    // The expected vector: the runtime's mean-pooled embedding, L2-normalised.
    auto model = cria::model::Model::load(path);
    const cria::vocab::Vocab vocab = cria::vocab::Vocab::from_gguf(model->file());
    cria::runtime::Embedder embedder(*model, cria::runtime::Pooling::Mean, 2);
    const auto tokens = vocab.tokenize("hello world", true, false);
    ASSERT_EQ(tokens.front(), vocab.bos());  // [CLS] ... [SEP]
    ASSERT_EQ(tokens.back(), vocab.sep());
    std::vector<float> want = embedder.embed(tokens).front();
    cria::runtime::normalize_embedding(want, 2);

    auto r = s.post("/v1/embeddings", {{"input", "hello world"}, {"model", "anything"}});
    ASSERT_EQ(r->status, 200) << r->body;
    json body = json::parse(r->body);
    EXPECT_EQ(body["object"], "list");
    EXPECT_EQ(body["model"], "anything");  // llama-server echoes the request's name here
    ASSERT_EQ(body["data"].size(), 1u);
    EXPECT_EQ(body["data"][0]["object"], "embedding");
    EXPECT_EQ(body["usage"]["prompt_tokens"], tokens.size());
    const auto got = as_floats(body["data"][0]["embedding"]);
    ASSERT_EQ(got.size(), want.size());
    double norm = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-5) << i;
        norm += double(got[i]) * got[i];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);

    // Strings, token arrays and one token array give the same vectors.
    std::vector<int> ids(tokens.begin(), tokens.end());
    r = s.post("/v1/embeddings", {{"input", json::array({"hello world", ids, "the cat sat"})}});
    ASSERT_EQ(r->status, 200) << r->body;
    body = json::parse(r->body);
    ASSERT_EQ(body["data"].size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(body["data"][i]["index"], i);
    EXPECT_EQ(as_floats(body["data"][0]["embedding"]), as_floats(body["data"][1]["embedding"]));
    EXPECT_NE(as_floats(body["data"][0]["embedding"]), as_floats(body["data"][2]["embedding"]));
    r = s.post("/v1/embeddings", {{"input", ids}, {"encoding_format", "base64"}});
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string b64 = json::parse(r->body)["data"][0]["embedding"];
    EXPECT_EQ(b64.size(), (want.size() * 4 + 2) / 3 * 4);  // base64 of the float32 bytes

    // llama-server's /embeddings: a bare array, each embedding a list of rows (one: pooled); "content" as input.
    r = s.post("/embeddings", {{"content", "hello world"}});
    ASSERT_EQ(r->status, 200) << r->body;
    body = json::parse(r->body);
    ASSERT_TRUE(body.is_array());
    ASSERT_EQ(body[0]["embedding"].size(), 1u);
    const auto pooled = as_floats(body[0]["embedding"][0]);
    for (size_t i = 0; i < pooled.size(); ++i) EXPECT_NEAR(pooled[i], want[i], 1e-5) << i;

    // An encoder generates no text.
    r = s.post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 2}});
    EXPECT_EQ(r->status, 501) << r->body;
    r = s.post("/v1/chat/completions", {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}});
    EXPECT_EQ(r->status, 501) << r->body;
    // Nor does it rerank without a classifier head.
    r = s.post("/v1/rerank", {{"query", "cat"}, {"documents", {"the cat", "a dog"}}});
    EXPECT_EQ(r->status, 501) << r->body;
}

TEST(EncoderServer, RerankOrdersByTheClassifierScore) {
    const std::string path = encoder_file(true);
    Running s(path);
    auto model = cria::model::Model::load(path);
    const cria::vocab::Vocab vocab = cria::vocab::Vocab::from_gguf(model->file());
    cria::runtime::Embedder embedder(*model, cria::runtime::Pooling::Rank, 2);
    const std::string query = "what is the capital of france?";
    const std::vector<std::string> docs = {"paris is the capital of france.", "the cat sat on the mat.",
                                           "hello world", "a dog", "france"};
    std::vector<float> want;
    for (const auto& d : docs) {
        const auto t = cria::runtime::rerank_tokens(*model, vocab, query, d);
        // [CLS] query [SEP] doc: the bert vocab adds BOS and SEP, not EOS.
        EXPECT_EQ(t.front(), vocab.bos());
        EXPECT_EQ(std::count(t.begin(), t.end(), vocab.sep()), 1);
        want.push_back(embedder.embed(t).front()[0]);
    }
    std::vector<size_t> order = {0, 1, 2, 3, 4};
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return want[a] > want[b]; });

    for (const char* route : {"/v1/rerank", "/rerank", "/v1/reranking"}) {
        auto r = s.post(route, {{"query", query}, {"documents", docs}, {"top_n", 3}});
        ASSERT_EQ(r->status, 200) << route << ": " << r->body;
        const json body = json::parse(r->body);
        EXPECT_EQ(body["object"], "list");
        ASSERT_EQ(body["results"].size(), 3u);
        for (size_t k = 0; k < 3; ++k) {
            EXPECT_EQ(body["results"][k]["index"], order[k]) << k;
            EXPECT_NEAR(body["results"][k]["relevance_score"].get<double>(), want[order[k]], 1e-5);
        }
        EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 0);
    }
    // No top_n: every document; TEI's "texts": a bare array with "score" (and the text when asked).
    auto r = s.post("/rerank", {{"query", query}, {"documents", docs}});
    EXPECT_EQ(json::parse(r->body)["results"].size(), docs.size());
    r = s.post("/rerank", {{"query", query}, {"texts", docs}, {"return_text", true}});
    ASSERT_EQ(r->status, 200) << r->body;
    const json tei = json::parse(r->body);
    ASSERT_TRUE(tei.is_array());
    EXPECT_EQ(tei[0]["index"], order[0]);
    EXPECT_EQ(tei[0]["text"], docs[order[0]]);
    EXPECT_NEAR(tei[0]["score"].get<double>(), want[order[0]], 1e-5);
    // Bad requests.
    EXPECT_EQ(s.post("/v1/rerank", {{"documents", docs}})->status, 400);
    EXPECT_EQ(s.post("/v1/rerank", {{"query", query}, {"documents", json::array()}})->status, 400);
    EXPECT_EQ(s.post("/v1/rerank", {{"query", query}, {"documents", {1, 2}}})->status, 400);
    EXPECT_EQ(s.post("/v1/rerank", {{"query", query}, {"documents", docs}, {"top_n", -1}})->status, 400);
    // A reranker's pooling is rank: it has no OpenAI embedding.
    EXPECT_EQ(s.post("/v1/embeddings", {{"input", "hello"}})->status, 501);
}

TEST(EncoderServer, PoolingFlagOverridesTheFile) {
    const std::string path = encoder_file(false);
    RuntimeBackendParams bp;
    bp.pooling = "cls";
    Running s(path, bp);
    auto model = cria::model::Model::load(path);
    const cria::vocab::Vocab vocab = cria::vocab::Vocab::from_gguf(model->file());
    cria::runtime::Embedder embedder(*model, cria::runtime::Pooling::Cls, 2);
    std::vector<float> want = embedder.embed(vocab.tokenize("the dog", true, false)).front();
    cria::runtime::normalize_embedding(want, 2);
    auto r = s.post("/v1/embeddings", {{"input", "the dog"}});
    ASSERT_EQ(r->status, 200) << r->body;
    const auto got = as_floats(json::parse(r->body)["data"][0]["embedding"]);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
    // Pooling none: /embeddings gives one row per token, not normalised (as
    // llama-server's send_embedding); /v1/embeddings refuses.
    RuntimeBackendParams none;
    none.pooling = "none";
    Running t(path, none);
    const auto tokens = vocab.tokenize("the dog", true, false);
    r = t.post("/embeddings", {{"input", "the dog"}});
    ASSERT_EQ(r->status, 200) << r->body;
    const json rows = json::parse(r->body)[0]["embedding"];
    ASSERT_EQ(rows.size(), tokens.size());
    cria::runtime::Embedder per_token(*model, cria::runtime::Pooling::None, 2);
    const auto states = per_token.embed(tokens);
    for (size_t k = 0; k < rows.size(); ++k) {
        const std::vector<float>& w = states[k];
        const auto g = as_floats(rows[k]);
        for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << k << " " << i;
    }
    EXPECT_EQ(t.post("/v1/embeddings", {{"input", "the dog"}})->status, 501);
    RuntimeBackendParams bad;
    bad.pooling = "max";
    EXPECT_THROW(RuntimeBackend(path, bad), cria::Error);
}

TEST(EncoderServer, EmbeddingsAsLlamaServerDoes) {
    const std::string path = encoder_file(false);
    Running s(path);
    auto model = cria::model::Model::load(path);
    const cria::vocab::Vocab vocab = cria::vocab::Vocab::from_gguf(model->file());
    cria::runtime::Embedder embedder(*model, cria::runtime::Pooling::Mean, 2);
    // Special tokens in the text are parsed (tokenize_input_prompts(..., true, true)).
    const auto tokens = vocab.tokenize("the cat [SEP] a dog", true, /*parse_special=*/true);
    ASSERT_EQ(std::count(tokens.begin(), tokens.end(), vocab.sep()), 2);
    const std::vector<float> raw = embedder.embed(tokens).front();
    // embd_normalize: the request's normalisation of the pooled row (-1: none, 1: taxicab).
    for (int mode : {-1, 1, 2}) {
        auto r = s.post("/v1/embeddings", {{"input", "the cat [SEP] a dog"}, {"embd_normalize", mode}});
        ASSERT_EQ(r->status, 200) << r->body;
        std::vector<float> want = raw;
        cria::runtime::normalize_embedding(want, mode);
        EXPECT_EQ(as_floats(json::parse(r->body)["data"][0]["embedding"]), want) << mode;
    }
    EXPECT_EQ(s.post("/v1/embeddings", {{"input", "x"}, {"embd_normalize", "2"}})->status, 400);
    EXPECT_EQ(s.post("/v1/embeddings", {{"input", "x"}, {"embd_normalize", -2}})->status, 400);
    // "content" (not OpenAI's) on /v1/embeddings: llama-server's bare reply.
    auto r = s.post("/v1/embeddings", {{"content", "hello"}});
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_TRUE(json::parse(r->body).is_array()) << r->body;
}

TEST(EncoderServer, RerankAsLlamaServerDoes) {
    const std::string path = encoder_file(true);
    Running s(path);
    const std::vector<std::string> docs = {"the cat", "a dog"};
    // The model name is echoed; "documents" wins over "texts", whose presence picks TEI's shape.
    auto r = s.post("/v1/rerank", {{"query", "cat"}, {"documents", docs}, {"model", "my-reranker"}});
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["model"], "my-reranker");
    r = s.post("/v1/rerank", {{"query", "cat"}, {"documents", docs}, {"texts", {"only one"}}, {"return_text", true}});
    ASSERT_EQ(r->status, 200) << r->body;
    const json tei = json::parse(r->body);
    ASSERT_TRUE(tei.is_array()) << r->body;
    ASSERT_EQ(tei.size(), 2u);
    EXPECT_EQ(tei[0]["text"], docs[tei[0]["index"].get<size_t>()]);
}

}  // namespace
