// Images in requests, over loopback: stories260K (width 64) with a tiny
// gemma3 projector (tests/data/mmproj, made by tools/mktinymmproj.py; 4
// image tokens per image). OpenAI data: URLs and Anthropic base64 blocks get
// completions whose usage counts the image tokens; remote URLs, malformed,
// huge and non-image payloads get 400 and the server stays up; a cached
// prefix is reused with the same image and recomputed with another.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using json = nlohmann::json;

namespace {

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string base64(const std::string& in) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
        for (int k = 18; k >= 0; k -= 6) out += t[(v >> k) & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t v = uint8_t(in[i]) << 16;
        out += t[(v >> 18) & 63];
        out += t[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == in.size()) {
        const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
        out += t[(v >> 18) & 63];
        out += t[(v >> 12) & 63];
        out += t[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

// A BMP header claiming 60000 x 60000 pixels (no pixel data follows).
std::string huge_bmp() {
    std::string b(54, '\0');
    const auto put32 = [&](size_t at, uint32_t v) {
        for (int k = 0; k < 4; ++k) b[at + k] = static_cast<char>(v >> (8 * k));
    };
    b[0] = 'B';
    b[1] = 'M';
    put32(2, 54);
    put32(10, 54);
    put32(14, 40);
    put32(18, 60000);
    put32(22, 60000);
    b[26] = 1;
    b[28] = 24;
    return b;
}

class ImageServer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::signal(SIGPIPE, SIG_IGN);
        const auto model = cria::test::model_path("stories260K/stories260K.gguf").string();
        RuntimeBackendParams bp;
        bp.n_seq = 1;
        bp.n_ctx = 1024;
        bp.n_threads = 2;
        ServerConfig config;
        config.port = 0;
        config.model_path = model;
        config.max_body_bytes = 1 << 20;
        slot_dir_ = new std::filesystem::path(cria::test::temp_dir() / "image-slots");
        std::filesystem::create_directories(*slot_dir_);
        config.slot_save_path = slot_dir_->string();
        config.image_encoder =
            std::make_shared<cria::media::ImageEncoder>(cria::test::data_path("mmproj/tiny-gemma3-w64.gguf").string(), 2);
        server_ = new Server(std::make_unique<RuntimeBackend>(model, bp), config);
        server_->start();
        png_ = new std::string(read_file(cria::test::data_path("mmproj/img-a-96x64.png")));
    }
    static void TearDownTestSuite() {
        delete server_;
        delete png_;
        delete slot_dir_;
    }
    httplib::Result post(const std::string& path, const json& body) {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(60, 0);
        return c.Post(path.c_str(), body.dump(), "application/json");
    }
    static json image_part(const std::string& bytes, const std::string& type = "image/png") {
        return {{"type", "image_url"}, {"image_url", {{"url", "data:" + type + ";base64," + base64(bytes)}}}};
    }
    static json chat(json content) {
        return {{"messages", {{{"role", "user"}, {"content", std::move(content)}}}}, {"max_tokens", 4}, {"temperature", 0}};
    }
    json ok(const std::string& path, const json& body) {
        auto r = post(path, body);
        EXPECT_TRUE(r);
        if (!r) return {};
        EXPECT_EQ(r->status, 200) << r->body;
        return json::parse(r->body);
    }
    void bad(const json& body, const std::string& words) {
        auto r = post("/v1/chat/completions", body);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(words), std::string::npos) << r->body;
    }

    static Server* server_;
    static std::string* png_;
    static std::filesystem::path* slot_dir_;
};
Server* ImageServer::server_ = nullptr;
std::string* ImageServer::png_ = nullptr;
std::filesystem::path* ImageServer::slot_dir_ = nullptr;

// A plain 112 x 112 BMP of one grey: another image than the PNG.
std::string grey_bmp() {
    std::string b(54 + 112 * 112 * 3, '\x40');
    b.replace(0, 54, std::string(54, '\0'));
    const auto put32 = [&](size_t at, uint32_t v) {
        for (int k = 0; k < 4; ++k) b[at + k] = static_cast<char>(v >> (8 * k));
    };
    b[0] = 'B';
    b[1] = 'M';
    put32(2, static_cast<uint32_t>(b.size()));
    put32(10, 54);
    put32(14, 40);
    put32(18, 112);
    put32(22, 112);
    b[26] = 1;
    b[28] = 24;
    return b;
}

TEST_F(ImageServer, AnOpenAIDataUrlImageGetsACompletionAndCountsItsTokens) {
    const json text_only = ok("/v1/chat/completions", chat(json::array({{{"type", "text"}, {"text", "Look."}}})));
    const json one = ok("/v1/chat/completions", chat(json::array({{{"type", "text"}, {"text", "Look."}}, image_part(*png_)})));
    const json two = ok("/v1/chat/completions",
                        chat(json::array({{{"type", "text"}, {"text", "Look."}}, image_part(*png_), image_part(*png_)})));
    ASSERT_TRUE(one.contains("usage"));
    EXPECT_EQ(one["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(one["usage"]["completion_tokens"], 4);
    const int base = text_only["usage"]["prompt_tokens"], n1 = one["usage"]["prompt_tokens"], n2 = two["usage"]["prompt_tokens"];
    // Each image: 4 image tokens plus its delimiter text (plain text in this
    // vocabulary, whose split at the image may differ by a token or so).
    EXPECT_GE(n1, base + 4);
    EXPECT_GE(n2, n1 + 4);
    EXPECT_LE(std::abs((n2 - n1) - (n1 - base)), 2);
}

// llama-server's multimodal completion prompt: the marker takes the image
// (with the projector's delimiters), usage counts its tokens; a marker
// without an image, bad base64 or a non-image is a 400.
TEST_F(ImageServer, ACompletionPromptWithMultimodalDataGetsACompletion) {
    const json text_only = ok("/v1/completions", {{"prompt", {{"prompt_string", "Once upon a time there"}}},
                                                  {"max_tokens", 4}, {"temperature", 0}});
    EXPECT_EQ(text_only["usage"]["completion_tokens"], 4);
    const json plain = ok("/v1/completions", {{"prompt", "Once upon a time there"}, {"max_tokens", 4}, {"temperature", 0}});
    EXPECT_EQ(text_only["choices"][0]["text"], plain["choices"][0]["text"]);  // the object form of the same text
    const json one = ok("/v1/completions",
                        {{"prompt", {{"prompt_string", "Once upon a time <__media__> there"}, {"multimodal_data", {base64(*png_)}}}},
                         {"max_tokens", 4}, {"temperature", 0}});
    EXPECT_EQ(one["usage"]["completion_tokens"], 4);
    EXPECT_GE(one["usage"]["prompt_tokens"].get<int>(), text_only["usage"]["prompt_tokens"].get<int>() + 4);
    const auto bad_completion = [&](const json& prompt, const std::string& words) {
        auto r = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}});
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(words), std::string::npos) << r->body;
    };
    bad_completion({{"prompt_string", "a <__media__> b <__media__> c"}, {"multimodal_data", {base64(*png_)}}}, "media markers");
    bad_completion({{"prompt_string", "a <__media__> b"}, {"multimodal_data", {"not base64!"}}}, "base64");
    bad_completion({{"prompt_string", "a <__media__> b"}, {"multimodal_data", {base64("plain text")}}}, "image");
    bad_completion({{"prompt_string", 7}}, "prompt_string");
    EXPECT_EQ(ok("/v1/completions", {{"prompt", "Once upon a time there"}, {"max_tokens", 4}, {"temperature", 0}})["choices"][0]["text"],
              plain["choices"][0]["text"]);  // still serving
}

TEST_F(ImageServer, AnAnthropicBase64ImageBlockGetsACompletion) {
    const json body = {{"max_tokens", 4},
                       {"messages",
                        {{{"role", "user"},
                          {"content",
                           {{{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", base64(*png_)}}}},
                            {{"type", "text"}, {"text", "What is this?"}}}}}}}};
    const json r = ok("/v1/messages", body);
    EXPECT_EQ(r["type"], "message");
    EXPECT_GE(r["usage"]["input_tokens"].get<int>(), 4);
    auto url = body;
    url["messages"][0]["content"][0]["source"] = {{"type", "url"}, {"url", "https://example.com/a.png"}};
    auto refused = post("/v1/messages", url);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
}

TEST_F(ImageServer, BadImagesGet400AndTheServerStaysUp) {
    bad(chat(json::array({{{"type", "image_url"}, {"image_url", {{"url", "https://example.com/cat.png"}}}}})),
        "remote images are not fetched");
    bad(chat(json::array({{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,@@@"}}}}})), "not valid base64");
    bad(chat(json::array({image_part("just some text, no image", "image/png")})), "not a JPEG");
    bad(chat(json::array({image_part("<html></html>", "text/html")})), "not an image");
    bad(chat(json::array({image_part(huge_bmp(), "image/bmp")})), "image 1");
    bad(chat(json::array({{{"type", "image_url"}}})), "image_url");
    json many = json::array();
    for (int i = 0; i < 17; ++i) many.push_back(image_part(*png_));
    bad(chat(many), "more than 16 images");
    // Still serving.
    ok("/v1/chat/completions", chat(json::array({{{"type", "text"}, {"text", "Hello"}}, image_part(*png_)})));
}

TEST_F(ImageServer, TheSameImageReusesTheCacheAndAnotherIsRecomputed) {
    const auto img = chat(json::array({image_part(*png_), {{"type", "text"}, {"text", "Tell me."}}}));
    const json first = ok("/v1/chat/completions", img);
    const json again = ok("/v1/chat/completions", img);
    const int n_prompt = again["usage"]["prompt_tokens"];
    // Everything but the last prompt token comes from the cache, the image included.
    EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), n_prompt - 1);
    // Another image in the same place: the prefix stops where the images start.
    const std::string bmp = grey_bmp();
    const json changed = ok("/v1/chat/completions", chat(json::array({image_part(bmp, "image/bmp"), {{"type", "text"}, {"text", "Tell me."}}})));
    const int cached = changed["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_LT(cached, n_prompt - 4 - 1);
    EXPECT_GT(cached, 0);  // the chat template's text before the image
    (void)first;
}

TEST_F(ImageServer, ARestoredSlotWithAnImageContinuesIdenticallyAndAnotherImageIsRecomputed) {
    const auto with_png = chat(json::array({image_part(*png_), {{"type", "text"}, {"text", "Once upon a time"}}}));
    const json first = ok("/v1/chat/completions", with_png);
    auto save = post("/slots/0?action=save", json{{"filename", "img.bin"}});
    ASSERT_TRUE(save);
    ASSERT_EQ(save->status, 200) << save->body;
    // Something else takes the slot, then the saved state comes back.
    ok("/v1/chat/completions", chat(json::array({image_part(grey_bmp(), "image/bmp")})));
    auto restore = post("/slots/0?action=restore", json{{"filename", "img.bin"}});
    ASSERT_TRUE(restore);
    ASSERT_EQ(restore->status, 200) << restore->body;
    const json again = ok("/v1/chat/completions", with_png);
    EXPECT_EQ(again["choices"][0]["message"]["content"], first["choices"][0]["message"]["content"]);
    const int n_prompt = again["usage"]["prompt_tokens"];
    EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), n_prompt - 1);
    // Restored again, with another image in the prompt: never the saved image's cells.
    ASSERT_EQ(post("/slots/0?action=restore", json{{"filename", "img.bin"}})->status, 200);
    const json other = ok("/v1/chat/completions",
                          chat(json::array({image_part(grey_bmp(), "image/bmp"), {{"type", "text"}, {"text", "Once upon a time"}}})));
    EXPECT_LT(other["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), n_prompt - 5);
}

TEST(ImageServerWithoutProjector, ImagesGet400) {
    std::signal(SIGPIPE, SIG_IGN);
    const auto model = cria::test::model_path("stories260K/stories260K.gguf").string();
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 256;
    bp.n_threads = 1;
    ServerConfig config;
    config.port = 0;
    Server server(std::make_unique<RuntimeBackend>(model, bp), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    const json body = {{"messages",
                        {{{"role", "user"},
                          {"content", {{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}}}}}}}};
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("--mmproj"), std::string::npos) << r->body;
}

}  // namespace
