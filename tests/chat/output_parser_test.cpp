// Output parsing per model family, and streaming == one-shot for every split.

#include <gtest/gtest.h>

#include "cria/chat/output_parser.h"
#include "cria/core/error.h"
#include "support/test_paths.h"

#include <fstream>
#include <sstream>

namespace {

using cria::chat::OutputFormat;
using cria::chat::OutputParserOptions;
using cria::chat::ParsedOutput;
using cria::chat::StreamingOutputParser;
using cria::chat::ToolCall;

ParsedOutput parse(const std::string& text, OutputFormat f, bool open = false) {
    return cria::chat::parse_output(text, OutputParserOptions{f, open});
}

void append(ParsedOutput& acc, const ParsedOutput& d) {
    acc.reasoning += d.reasoning;
    acc.content += d.content;
    acc.tool_calls.insert(acc.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

// Feeds `text` in the given pieces; also checks no delta ever shows part of a marker.
ParsedOutput stream(const std::string& text, const std::vector<size_t>& cuts, OutputFormat f, bool open) {
    StreamingOutputParser p(OutputParserOptions{f, open});
    ParsedOutput acc;
    size_t prev = 0;
    for (size_t cut : cuts) {
        append(acc, p.push(std::string_view(text).substr(prev, cut - prev)));
        prev = cut;
    }
    append(acc, p.push(std::string_view(text).substr(prev)));
    append(acc, p.finish());
    return acc;
}

void expect_same(const ParsedOutput& a, const ParsedOutput& b, const std::string& where) {
    EXPECT_EQ(a.reasoning, b.reasoning) << where;
    EXPECT_EQ(a.content, b.content) << where;
    EXPECT_EQ(a.tool_calls, b.tool_calls) << where;
}

// Streaming equals one-shot parsing for every single split point and byte by byte.
void expect_stream_equivalent(const std::string& text, OutputFormat f, bool open = false) {
    const ParsedOutput whole = parse(text, f, open);
    for (size_t cut = 0; cut <= text.size(); ++cut) expect_same(stream(text, {cut}, f, open), whole, "split at " + std::to_string(cut));
    std::vector<size_t> every;
    for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
    expect_same(stream(text, every, f, open), whole, "byte by byte");
}

TEST(OutputParser, HermesReasoningContentAndToolCalls) {
    const std::string text =
        "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    const auto r = parse(text, OutputFormat::Hermes);
    EXPECT_EQ(r.reasoning, "\nThe user wants weather.\n");
    EXPECT_EQ(r.content, "\n\nLet me check.\n\n");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[0], (ToolCall{"", "get_weather", "{\"city\":\"Paris\"}"}));
    EXPECT_EQ(r.tool_calls[1], (ToolCall{"", "get_time", "{}"}));
    expect_stream_equivalent(text, OutputFormat::Hermes);
}

TEST(OutputParser, ReasoningOpenedByThePrompt) {
    const std::string text = "thinking here</think>answer";
    const auto r = parse(text, OutputFormat::Hermes, true);
    EXPECT_EQ(r.reasoning, "thinking here");
    EXPECT_EQ(r.content, "answer");
    expect_stream_equivalent(text, OutputFormat::Hermes, true);
}

TEST(OutputParser, BrokenToolCallStaysAsContent) {
    const std::string text = "a <tool_call>{not json}</tool_call> b <tool_call>{\"name\": \"x\"";
    const auto r = parse(text, OutputFormat::Hermes);
    EXPECT_TRUE(r.tool_calls.empty());
    EXPECT_EQ(r.content, text);
    expect_stream_equivalent(text, OutputFormat::Hermes);
}

TEST(OutputParser, PartialMarkerAtTheEndIsText) {
    const auto r = parse("hello <tool_ca", OutputFormat::Hermes);
    EXPECT_EQ(r.content, "hello <tool_ca");
    StreamingOutputParser p(OutputParserOptions{OutputFormat::Hermes, false});
    EXPECT_EQ(p.push("hello <tool_ca").content, "hello ");  // the possible marker is held back
    EXPECT_EQ(p.push("r").content, "<tool_car");
}

TEST(OutputParser, Llama3JsonToolCall) {
    const std::string text = "  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
    const auto r = parse(text, OutputFormat::Llama3);
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0], (ToolCall{"", "get_weather", "{\"city\":\"Paris\"}"}));
    expect_stream_equivalent(text, OutputFormat::Llama3);

    const std::string tagged = "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}";
    const auto t = parse(tagged, OutputFormat::Llama3);
    ASSERT_EQ(t.tool_calls.size(), 1u);
    EXPECT_EQ(t.tool_calls[0].arguments, "{\"a\":1}");
    expect_stream_equivalent(tagged, OutputFormat::Llama3);

    const std::string plain = "{braces} in a normal answer";
    EXPECT_EQ(parse(plain, OutputFormat::Llama3).content, plain);
    expect_stream_equivalent(plain, OutputFormat::Llama3);
    EXPECT_EQ(parse("Sure: {x}", OutputFormat::Llama3).content, "Sure: {x}");
}

TEST(OutputParser, MistralBothSyntaxes) {
    const std::string v3 = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"}]";
    const auto a = parse(v3, OutputFormat::Mistral);
    ASSERT_EQ(a.tool_calls.size(), 1u);
    EXPECT_EQ(a.tool_calls[0], (ToolCall{"abcdefghi", "get_weather", "{\"city\":\"Paris\"}"}));
    expect_stream_equivalent(v3, OutputFormat::Mistral);

    const std::string v11 = "[THINK]hmm[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}";
    const auto b = parse(v11, OutputFormat::Mistral);
    EXPECT_EQ(b.reasoning, "hmm");
    EXPECT_EQ(b.content, "Checking.");
    ASSERT_EQ(b.tool_calls.size(), 2u);
    EXPECT_EQ(b.tool_calls[0], (ToolCall{"", "get_weather", "{\"city\":\"Paris\"}"}));
    EXPECT_EQ(b.tool_calls[1], (ToolCall{"", "get_time", "{}"}));
    expect_stream_equivalent(v11, OutputFormat::Mistral);
}

TEST(OutputParser, DeepSeekR1AndV3) {
    const std::string r1 =
        "<think>ok</think>Calling.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    const auto a = parse(r1, OutputFormat::DeepSeek);
    EXPECT_EQ(a.reasoning, "ok");
    EXPECT_EQ(a.content, "Calling.");
    ASSERT_EQ(a.tool_calls.size(), 1u);
    EXPECT_EQ(a.tool_calls[0], (ToolCall{"", "get_weather", "{\"city\":\"Paris\"}"}));
    expect_stream_equivalent(r1, OutputFormat::DeepSeek);

    const std::string v31 =
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜>"
        "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    const auto b = parse(v31, OutputFormat::DeepSeek);
    ASSERT_EQ(b.tool_calls.size(), 2u);
    EXPECT_EQ(b.tool_calls[1], (ToolCall{"", "get_time", "{}"}));
    expect_stream_equivalent(v31, OutputFormat::DeepSeek);
}

TEST(OutputParser, HarmonyChannels) {
    const std::string text =
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
        "<|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>";
    const auto a = parse(text, OutputFormat::Harmony);
    EXPECT_EQ(a.reasoning, "Need weather.");
    EXPECT_EQ(a.content, "");
    ASSERT_EQ(a.tool_calls.size(), 1u);
    EXPECT_EQ(a.tool_calls[0], (ToolCall{"", "get_weather", "{\"city\":\"Paris\"}"}));
    expect_stream_equivalent(text, OutputFormat::Harmony);

    const std::string final_answer = "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.<|return|>";
    const auto b = parse(final_answer, OutputFormat::Harmony);
    EXPECT_EQ(b.reasoning, "Easy.");
    EXPECT_EQ(b.content, "It is 4.");
    expect_stream_equivalent(final_answer, OutputFormat::Harmony);
}

TEST(OutputParser, GenericOnlySplitsReasoning) {
    const std::string text = "<seed:think>plan</seed:think>answer <tool_call>{}</tool_call>";
    const auto r = parse(text, OutputFormat::Generic);
    EXPECT_EQ(r.reasoning, "plan");
    EXPECT_EQ(r.content, "answer <tool_call>{}</tool_call>");
    EXPECT_TRUE(r.tool_calls.empty());
    expect_stream_equivalent(text, OutputFormat::Generic);
}

TEST(OutputParser, FormatNames) {
    EXPECT_EQ(cria::chat::output_format_from_name("qwen"), OutputFormat::Hermes);
    EXPECT_EQ(cria::chat::output_format_from_name("gpt-oss"), OutputFormat::Harmony);
    EXPECT_THROW(cria::chat::output_format_from_name("nope"), cria::Error);
}

}  // namespace

namespace {

std::string template_source(const std::string& name) {
    std::ifstream in(cria::test::data_path("chat-templates/" + name + ".jinja"), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(OutputParser, DetectsTheFormatOfRealTemplates) {
    using cria::chat::detect_output_format;
    EXPECT_EQ(detect_output_format(template_source("Qwen-Qwen3-0.6B")), OutputFormat::Hermes);
    EXPECT_EQ(detect_output_format(template_source("NousResearch-Hermes-3-Llama-3.1-8B-tool_use")), OutputFormat::Hermes);
    EXPECT_EQ(detect_output_format(template_source("meta-llama-Llama-3.1-8B-Instruct")), OutputFormat::Llama3);
    EXPECT_EQ(detect_output_format(template_source("mistralai-Mistral-Nemo-Instruct-2407")), OutputFormat::Mistral);
    EXPECT_EQ(detect_output_format(template_source("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")), OutputFormat::DeepSeek);
    EXPECT_EQ(detect_output_format(template_source("openai-gpt-oss-120b")), OutputFormat::Harmony);
    EXPECT_EQ(detect_output_format(template_source("google-gemma-2-2b-it")), OutputFormat::Generic);
}

TEST(OutputParser, PromptOpensReasoning) {
    EXPECT_TRUE(cria::chat::prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
    EXPECT_FALSE(cria::chat::prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    EXPECT_FALSE(cria::chat::prompt_opens_reasoning("<|im_start|>assistant\n"));
}

}  // namespace
