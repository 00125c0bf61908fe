// ChatFormatter: template choice, BOS handling, output format detection,
// grammars for response_format and tool calls.
#include <gtest/gtest.h>

#include "cria/chat/output_parser.h"
#include "cria/vocab/vocab.h"
#include "server/chat_prompt.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {
const cria::vocab::Vocab& vocab() {
    static const auto v = cria::vocab::Vocab::load(cria::test::model_path("stories260K/stories260K.gguf").string());
    return v;
}
ChatJob job_with(const char* body) { return parse_openai_chat(json::parse(body)); }
const char* kTools = R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}])";
}  // namespace

TEST(ChatFormatter, DefaultIsChatMlWithStopStrings) {
    ChatFormatter f(vocab(), "");
    EXPECT_TRUE(f.is_default());
    EXPECT_EQ(f.output_format(), cria::chat::OutputFormat::Hermes);
    ChatJob job = job_with(R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}]})");
    f.prepare(job);
    const std::string text = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n";
    EXPECT_EQ(job.gen.prompt, vocab().tokenize(text, true, true));
    EXPECT_EQ(f.render(job.messages, nullptr, true, nullptr), text);
    EXPECT_EQ(job.gen.prompt.front(), vocab().bos());
    EXPECT_EQ(job.gen.stop, (std::vector<std::string>{"<|im_end|>", "<|im_start|>"}));
    EXPECT_TRUE(job.gen.grammar.empty());
}

TEST(ChatFormatter, BosTextIsNotDoubled) {
    ChatFormatter f(vocab(), "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
    ChatJob job = job_with(R"({"messages":[{"role":"user","content":"hi"}]})");
    f.prepare(job);
    ASSERT_GE(job.gen.prompt.size(), 2u);
    EXPECT_EQ(job.gen.prompt[0], vocab().bos());
    EXPECT_NE(job.gen.prompt[1], vocab().bos());
}

TEST(ChatFormatter, DetectsFormatsAndOpenReasoning) {
    EXPECT_EQ(ChatFormatter(vocab(), "[TOOL_CALLS]{{ messages }}").output_format(), cria::chat::OutputFormat::Mistral);
    EXPECT_EQ(ChatFormatter(vocab(), "<|python_tag|>{{ messages }}").output_format(), cria::chat::OutputFormat::Llama3);
    EXPECT_EQ(ChatFormatter(vocab(), "<|channel|>{{ messages }}").output_format(), cria::chat::OutputFormat::Harmony);
    EXPECT_EQ(ChatFormatter(vocab(), "{{ messages }}").output_format(), cria::chat::OutputFormat::Generic);
    ChatFormatter think(vocab(), "{% for m in messages %}{{ m.content }}{% endfor %}<think>\n");
    ChatJob job = job_with(R"({"messages":[{"role":"user","content":"q"}]})");
    EXPECT_TRUE(think.prepare(job).reasoning_starts_open);
}

TEST(ChatFormatter, GrammarsForSchemaAndTools) {
    ChatFormatter f(vocab(), "");
    ChatJob schema = job_with(R"({"messages":[{"role":"user","content":"q"}],"response_format":{"type":"json_object"}})");
    f.prepare(schema);
    EXPECT_FALSE(schema.gen.grammar.empty());
    EXPECT_FALSE(schema.gen.grammar_options.lazy);

    ChatJob forced = job_with((std::string(R"({"messages":[{"role":"user","content":"q"}],"tool_choice":"required","tools":)") + kTools + "}").c_str());
    f.prepare(forced);
    EXPECT_NE(forced.gen.grammar.find("tool_call"), std::string::npos);
    EXPECT_FALSE(forced.gen.grammar_options.lazy);

    ChatJob automatic = job_with((std::string(R"({"messages":[{"role":"user","content":"q"}],"tools":)") + kTools + "}").c_str());
    f.prepare(automatic);
    EXPECT_TRUE(automatic.gen.grammar_options.lazy);
    EXPECT_FALSE(automatic.gen.grammar_options.triggers.words.empty());
    // The tools are shown to the model.
    EXPECT_NE(vocab().detokenize(automatic.gen.prompt).find("<tools>"), std::string::npos);

    ChatJob none = job_with((std::string(R"({"messages":[{"role":"user","content":"q"}],"tool_choice":"none","tools":)") + kTools + "}").c_str());
    f.prepare(none);
    EXPECT_TRUE(none.gen.grammar.empty());
    EXPECT_EQ(vocab().detokenize(none.gen.prompt).find("<tools>"), std::string::npos);

    ChatJob unknown = job_with((std::string(R"({"messages":[{"role":"user","content":"q"}],"tool_choice":{"type":"function","function":{"name":"g"}},"tools":)") + kTools + "}").c_str());
    EXPECT_THROW(f.prepare(unknown), ApiError);
}

TEST(ChatFormatter, TemplateErrorsAre400) {
    ChatFormatter f(vocab(), "{{ raise_exception('no system role') }}");
    ChatJob job = job_with(R"({"messages":[{"role":"user","content":"q"}]})");
    try {
        f.prepare(job);
        FAIL() << "no error";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_NE(std::string(e.what()).find("no system role"), std::string::npos);
    }
    EXPECT_THROW(ChatFormatter(vocab(), "{% if %}"), cria::Error);
}
