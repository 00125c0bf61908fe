// Replays the HTTP fuzz target's corpus (fuzz/corpus/http) and the inputs it
// once failed on (tests/data/http/regressions) through the same server the
// target drives (http_fuzz_server.h): none may crash or be answered 500,
// and the corpus's well-formed seeds get the answers they ask for.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/http_fuzz_server.h"
#include "support/test_paths.h"

namespace {

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    if (std::filesystem::is_directory(dir))
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

cria::server::Server& fuzz_server() {
    static auto server = cria::test::make_http_fuzz_server(cria::test::model_path("stories260K/stories260K.gguf").string());
    return *server;
}

}  // namespace

TEST(HttpReplay, SeedsGetTheAnswersTheyAskFor) {
    const auto dir = cria::test::source_dir() / "fuzz/corpus/http";
    const auto statuses = [&](const char* name) {
        return fuzz_server().serve_bytes(read_file(dir / name)).statuses;
    };
    EXPECT_EQ(statuses("health"), std::vector<int>{200});
    EXPECT_EQ(statuses("health_twice"), (std::vector<int>{200, 200}));
    EXPECT_EQ(statuses("chat"), std::vector<int>{200});
    EXPECT_EQ(statuses("chat_stream"), std::vector<int>{200});
    EXPECT_EQ(statuses("messages_stream"), std::vector<int>{200}) << fuzz_server().serve_bytes(read_file(dir / "messages_stream")).reply;
    EXPECT_EQ(statuses("embeddings"), std::vector<int>{200});
    EXPECT_EQ(statuses("cross_site"), std::vector<int>{403});
    EXPECT_EQ(statuses("bad_json"), std::vector<int>{400});
    EXPECT_EQ(statuses("chunked"), std::vector<int>{411});
    const std::string stream = fuzz_server().serve_bytes(read_file(dir / "chat_stream")).reply;
    EXPECT_NE(stream.find("data: [DONE]"), std::string::npos) << stream;
}

TEST(HttpReplay, CorpusAndRegressionsNeverCrashOrAnswer500) {
    std::vector<std::filesystem::path> inputs = files_in(cria::test::source_dir() / "fuzz/corpus/http");
    ASSERT_FALSE(inputs.empty()) << "the corpus is missing";
    for (const auto& p : files_in(cria::test::data_path("http/regressions"))) inputs.push_back(p);
    for (const auto& p : inputs) {
        const auto exchange = fuzz_server().serve_bytes(read_file(p));
        for (int status : exchange.statuses) EXPECT_NE(status, 500) << p << "\n" << exchange.reply.substr(0, 1000);
    }
}
