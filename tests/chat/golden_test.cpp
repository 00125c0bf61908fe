// Every (template, conversation) pair of tests/data/chat-golden must render
// byte-identically to Python's Jinja2, or fail with the same exception.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cria/chat/chat_template.h"
#include "support/test_paths.h"

namespace {

using nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct GoldenCase {
    std::string template_name;
    std::string conversation;
    std::string status;
    std::string file;
    std::string bos, eos;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.template_name << "/" << c.conversation; }

std::vector<GoldenCase> load_cases() {
    const auto index = ordered_json::parse(read_file(cria::test::data_path("chat-golden/index.json")));
    std::vector<GoldenCase> cases;
    for (const auto& e : index["entries"])
        cases.push_back({e["template"], e["conversation"], e["status"], e["file"], e["bos_token"], e["eos_token"]});
    return cases;
}

// The conversation's time for strftime_now: 2026-01-15 10:30 UTC.
constexpr long long kGoldenNow = 1768473000;

class ChatGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ChatGolden, MatchesJinja2) {
    const GoldenCase& c = GetParam();
    static const auto conversations = ordered_json::parse(read_file(cria::test::data_path("chat-golden/conversations.json")));
    ordered_json conv;
    for (const auto& x : conversations)
        if (x["name"] == c.conversation) conv = x;
    ASSERT_FALSE(conv.is_null());

    cria::chat::ChatTemplateInputs in;
    in.messages = conv["messages"];
    if (conv.contains("tools")) in.tools = conv["tools"];
    in.add_generation_prompt = conv["add_generation_prompt"];
    in.bos_token = c.bos;
    in.eos_token = c.eos;
    in.now = kGoldenNow;
    const std::string source = read_file(cria::test::data_path("chat-templates/" + c.template_name + ".jinja"));
    const std::string expected = read_file(cria::test::data_path("chat-golden/" + c.file));

    if (c.status == "ok") {
        std::string got;
        try {
            got = cria::chat::render_chat_template(source, in);
        } catch (const cria::Error& e) {
            FAIL() << "render failed: " << e.what();
        }
        EXPECT_EQ(got, expected);
    } else {
        std::string want = expected;
        while (!want.empty() && want.back() == '\n') want.pop_back();
        try {
            const std::string got = cria::chat::render_chat_template(source, in);
            FAIL() << "expected error '" << want << "', rendered:\n" << got;
        } catch (const cria::jinja::TemplateError& e) {
            EXPECT_EQ(e.python_form(), want);
        }
    }
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
    std::string n = info.param.template_name + "__" + info.param.conversation;
    for (auto& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatGolden, ::testing::ValuesIn(load_cases()), case_name);

}  // namespace
