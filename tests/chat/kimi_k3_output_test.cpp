// The Kimi-K3 output format: the generation prompt ends in
// "<|open|>think<|sep|>" (or "<|open|>response<|sep|>" without thinking), the
// model closes the think block, writes its response, and calls tools with
// typed XTML arguments in a tools block. Streaming equals one-shot at every
// split, no delta shows a piece of a tag, and malformed markup is kept as text.

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cria/chat/chat_template.h"
#include "cria/chat/output_parser.h"
#include "support/test_paths.h"

namespace {

using cria::chat::OutputFormat;
using cria::chat::OutputParserOptions;
using cria::chat::ParsedOutput;
using cria::chat::StreamingOutputParser;
using cria::chat::ToolCall;

constexpr OutputFormat kK3 = OutputFormat::KimiK3;

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

ParsedOutput parse(const std::string& text, bool thinking = true) {
    return cria::chat::parse_output(text, OutputParserOptions{kK3, thinking});
}

void append(ParsedOutput& acc, const ParsedOutput& d) {
    acc.reasoning += d.reasoning;
    acc.content += d.content;
    acc.tool_calls.insert(acc.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

ParsedOutput stream(const std::string& text, const std::vector<size_t>& cuts, bool thinking) {
    StreamingOutputParser p(OutputParserOptions{kK3, thinking});
    ParsedOutput acc;
    size_t prev = 0;
    for (size_t cut : cuts) {
        const ParsedOutput d = p.push(std::string_view(text).substr(prev, cut - prev));
        // No delta may show a piece of a tag.
        EXPECT_EQ(d.content.find("<|"), std::string::npos) << d.content;
        EXPECT_EQ(d.reasoning.find("<|"), std::string::npos) << d.reasoning;
        append(acc, d);
        prev = cut;
    }
    append(acc, p.push(std::string_view(text).substr(prev)));
    append(acc, p.finish());
    return acc;
}

void expect_stream_equivalent(const std::string& text, bool thinking = true) {
    const ParsedOutput whole = parse(text, thinking);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        const ParsedOutput s = stream(text, {cut}, thinking);
        EXPECT_EQ(s.reasoning, whole.reasoning) << "split at " << cut;
        EXPECT_EQ(s.content, whole.content) << "split at " << cut;
        EXPECT_EQ(s.tool_calls, whole.tool_calls) << "split at " << cut;
    }
    std::vector<size_t> every;
    for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
    const ParsedOutput s = stream(text, every, thinking);
    EXPECT_EQ(s.reasoning, whole.reasoning) << "byte by byte";
    EXPECT_EQ(s.content, whole.content) << "byte by byte";
    EXPECT_EQ(s.tool_calls, whole.tool_calls) << "byte by byte";
}

const std::string kWeatherCall =
    "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
    "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>"
    "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|>"
    "<|open|>argument key=\"metric\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|>"
    "<|open|>argument key=\"hours\" type=\"array\"<|sep|>[6,12]<|close|>argument<|sep|>"
    "<|open|>argument key=\"where\" type=\"object\"<|sep|>{\"lat\": 48.8}<|close|>argument<|sep|>"
    "<|open|>argument key=\"note\" type=\"null\"<|sep|>null<|close|>argument<|sep|>"
    "<|close|>call<|sep|>";
const std::string kRunCall =
    "<|open|>call tool=\"run\" index=\"2\"<|sep|>"
    "<|open|>json type=\"object\"<|sep|>{\"cmd\": \"ls -l\"}<|close|>json<|sep|>"
    "<|close|>call<|sep|>";

TEST(KimiK3Output, DetectedFromTheTemplateAndItsGenerationPrompt) {
    const std::string source = read_file(cria::test::data_path("chat-templates/Kimi-K3.jinja"));
    EXPECT_EQ(cria::chat::detect_output_format(source), kK3);
    EXPECT_EQ(cria::chat::output_format_from_name("kimi-k3"), kK3);
    // The golden render's generation prompt opens the think block.
    const std::string prompt = read_file(cria::test::data_path("chat-golden/Kimi-K3/tool_call_roundtrip.txt"));
    EXPECT_TRUE(cria::chat::prompt_opens_reasoning(prompt));
    EXPECT_FALSE(cria::chat::prompt_opens_reasoning("<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>"));
}

TEST(KimiK3Output, ReasoningContentAndTwoTypedToolCalls) {
    const std::string text = "The user wants weather and a listing.<|close|>think<|sep|><|open|>response<|sep|>"
                             "Checking both.<|close|>response<|sep|><|open|>tools<|sep|>" +
                             kWeatherCall + kRunCall + "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>";
    const auto r = parse(text);
    EXPECT_EQ(r.reasoning, "The user wants weather and a listing.");
    EXPECT_EQ(r.content, "Checking both.");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[0],
              (ToolCall{"functions.get_weather:1", "get_weather",
                        R"({"city":"Paris","days":3,"metric":true,"hours":[6,12],"where":{"lat":48.8},"note":null})"}));
    EXPECT_EQ(r.tool_calls[1], (ToolCall{"functions.run:2", "run", R"({"cmd":"ls -l"})"}));
    expect_stream_equivalent(text);
}

TEST(KimiK3Output, AStringArgumentIsRawTextEvenWhenItReadsAsJson) {
    // type="string" decides: "3" stays a string, and escaped attributes are unescaped.
    const std::string text = "<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>"
                             "<|open|>call tool=\"a&amp;b\" index=\"1\"<|sep|>"
                             "<|open|>argument key=\"say &quot;hi&quot;\" type=\"string\"<|sep|>3<|close|>argument<|sep|>"
                             "<|open|>argument key=\"text\" type=\"string\"<|sep|>x <|close|>call<|sep|> y<|close|>argument<|sep|>"
                             "<|close|>call<|sep|><|close|>tools<|sep|>";
    const auto r = parse(text);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "a&b");
    EXPECT_EQ(r.tool_calls[0].arguments, R"({"say \"hi\"":"3","text":"x <|close|>call<|sep|> y"})");
    EXPECT_EQ(r.content, "");
    EXPECT_EQ(r.reasoning, "");
}

TEST(KimiK3Output, ThinkingOffStartsInTheResponse) {
    const std::string text = "Hello there.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";
    const auto r = parse(text, false);
    EXPECT_EQ(r.content, "Hello there.");
    EXPECT_EQ(r.reasoning, "");
    EXPECT_TRUE(r.tool_calls.empty());
    expect_stream_equivalent(text, false);
}

TEST(KimiK3Output, WhatTheTemplateRendersParsesBack) {
    // The template's own rendering of an assistant turn with typed calls,
    // after its "<|open|>message role="assistant"<|sep|><|open|>think<|sep|>".
    cria::chat::ChatTemplateInputs in;
    in.messages = nlohmann::ordered_json::parse(R"([
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "reasoning_content": "Look it up.", "content": "On it.", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "metric": false}}},
            {"type": "function", "function": {"name": "run", "arguments": "{\"cmd\": \"date\"}"}}]}])");
    in.add_generation_prompt = false;
    const std::string source = read_file(cria::test::data_path("chat-templates/Kimi-K3.jinja"));
    const std::string rendered = cria::chat::render_chat_template(source, in);
    const std::string opener = "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>";
    const size_t at = rendered.find(opener);
    ASSERT_NE(at, std::string::npos) << rendered;
    const std::string reply = rendered.substr(at + opener.size());
    const auto r = parse(reply);
    EXPECT_EQ(r.reasoning, "Look it up.");
    EXPECT_EQ(r.content, "On it.");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[0], (ToolCall{"functions.get_weather:1", "get_weather", R"({"city":"Paris","days":3,"metric":false})"}));
    EXPECT_EQ(r.tool_calls[1], (ToolCall{"functions.run:2", "run", R"({"cmd":"date"})"}));
    expect_stream_equivalent(reply);
}

TEST(KimiK3Output, MalformedMarkupIsKeptAsTextAndNeverCrashes) {
    const std::string head = "<|close|>think<|sep|><|open|>response<|sep|>Hi<|close|>response<|sep|><|open|>tools<|sep|>";
    // A value that does not fit its declared type is no call: the block stays text.
    const std::string bad_type = head +
                                 "<|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>argument key=\"n\" type=\"number\"<|sep|>"
                                 "abc<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
    auto r = parse(bad_type);
    EXPECT_TRUE(r.tool_calls.empty());
    EXPECT_EQ(r.content, "Hi" + bad_type.substr(bad_type.find("<|open|>tools<|sep|>")));
    // A call without a tool name, an unknown tag, an unterminated attribute.
    for (const std::string body : {"<|open|>call index=\"1\"<|sep|><|close|>call<|sep|>",
                                   "<|open|>call tool=\"f\"<|sep|><|open|>weird<|sep|>x<|close|>weird<|sep|><|close|>call<|sep|>",
                                   "<|open|>call tool=\"f<|sep|><|close|>call<|sep|>", "<|open|>call tool=\"f\"<|sep|>",
                                   "garbage"}) {
        r = parse(head + body + "<|close|>tools<|sep|>");
        EXPECT_TRUE(r.tool_calls.empty()) << body;
        EXPECT_NE(r.content.find(body), std::string::npos) << body;
    }
    // Every prefix of a valid reply (generation cut short) parses without
    // throwing, and complete calls before the cut are never invented.
    const std::string full = "think<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|><|open|>tools<|sep|>" +
                             kWeatherCall + kRunCall + "<|close|>tools<|sep|>";
    for (size_t n = 0; n <= full.size(); ++n) {
        const std::string cut = full.substr(0, n);
        ParsedOutput p;
        EXPECT_NO_THROW(p = parse(cut)) << n;
        EXPECT_LE(p.tool_calls.size(), 2u) << n;
    }
    // An unterminated tools block with complete calls still yields them.
    r = parse(head + kWeatherCall + kRunCall);
    EXPECT_EQ(r.tool_calls.size(), 2u);
}

TEST(KimiK3Output, RandomTagSoupNeverThrowsAndStreamsAsOneShot) {
    // Deterministic soup of whole and broken tags, typed values and text: the
    // parser must never throw, and streaming in random pieces must agree with
    // parsing the whole.
    const std::vector<std::string> pieces = {"<|open|>", "<|close|>", "<|sep|>", "think", "response", "tools", "call",
                                             "argument", "json", " tool=\"f\"", " index=\"1\"", " key=\"k\"",
                                             " type=\"number\"", " type=\"string\"", "{\"a\":1}", "42", "<|",
                                             "|>", "\"", "text ", "<|close|>tools<|sep|>", "<|open|>tools<|sep|>",
                                             "<|close|>think<|sep|>", "<|end_of_msg|>", kWeatherCall, "\xff"};
    std::mt19937 rng(1234);
    for (int round = 0; round < 200; ++round) {
        std::string text;
        const int n = 1 + static_cast<int>(rng() % 16);
        for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
        for (bool thinking : {true, false}) {
            ParsedOutput whole;
            ASSERT_NO_THROW(whole = parse(text, thinking)) << text;
            StreamingOutputParser p(OutputParserOptions{kK3, thinking});
            ParsedOutput acc;
            for (size_t pos = 0; pos < text.size();) {
                const size_t len = 1 + rng() % 9;
                append(acc, p.push(std::string_view(text).substr(pos, len)));
                pos += len;
            }
            append(acc, p.finish());
            EXPECT_EQ(acc.reasoning, whole.reasoning) << text;
            EXPECT_EQ(acc.content, whole.content) << text;
            EXPECT_EQ(acc.tool_calls, whole.tool_calls) << text;
        }
    }
}

}  // namespace
