// The Muse Glimmer output format (archs-part2.md, "Muse Glimmer chat
// format"): the model continues the prompt's "<|start|>assistant" with
// " to=RECIPIENT<|message|>BODY", so the header never reaches content;
// to=self is reasoning, to=user (or no recipient) the answer, any other
// recipient an ATEM tool call. Streaming equals one-shot at every split.

#include <gtest/gtest.h>

#include <fstream>
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

constexpr OutputFormat kMuse = OutputFormat::MuseGlimmer;

ParsedOutput parse(const std::string& text) { return cria::chat::parse_output(text, OutputParserOptions{kMuse, false}); }

void append(ParsedOutput& acc, const ParsedOutput& d) {
    acc.reasoning += d.reasoning;
    acc.content += d.content;
    acc.tool_calls.insert(acc.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

ParsedOutput stream(const std::string& text, const std::vector<size_t>& cuts) {
    StreamingOutputParser p(OutputParserOptions{kMuse, false});
    ParsedOutput acc;
    size_t prev = 0;
    for (size_t cut : cuts) {
        const ParsedOutput d = p.push(std::string_view(text).substr(prev, cut - prev));
        // No delta may show a piece of a header or marker.
        EXPECT_EQ(d.content.find("<|"), std::string::npos) << d.content;
        EXPECT_EQ(d.content.find("to="), std::string::npos) << d.content;
        append(acc, d);
        prev = cut;
    }
    append(acc, p.push(std::string_view(text).substr(prev)));
    append(acc, p.finish());
    return acc;
}

void expect_stream_equivalent(const std::string& text) {
    const ParsedOutput whole = parse(text);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        const ParsedOutput s = stream(text, {cut});
        EXPECT_EQ(s.reasoning, whole.reasoning) << "split at " << cut;
        EXPECT_EQ(s.content, whole.content) << "split at " << cut;
        EXPECT_EQ(s.tool_calls, whole.tool_calls) << "split at " << cut;
    }
    std::vector<size_t> every;
    for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
    const ParsedOutput s = stream(text, every);
    EXPECT_EQ(s.reasoning, whole.reasoning) << "byte by byte";
    EXPECT_EQ(s.content, whole.content) << "byte by byte";
    EXPECT_EQ(s.tool_calls, whole.tool_calls) << "byte by byte";
}

const std::string kWeatherCall =
    "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n"
    "<atem:parameter name=\"city\">Paris</atem:parameter>\n"
    "<atem:parameter name=\"days\">3</atem:parameter>\n"
    "</atem:invoke>\n</atem:function_calls>";

TEST(MuseGlimmerOutput, TheAnswerHeaderDoesNotLeakIntoContent) {
    const std::string text = " to=user<|message|>It is 4.<|eot|>";
    const auto r = parse(text);
    EXPECT_EQ(r.content, "It is 4.");
    EXPECT_EQ(r.reasoning, "");
    EXPECT_TRUE(r.tool_calls.empty());
    expect_stream_equivalent(text);
    // No recipient is the answer too.
    EXPECT_EQ(parse("<|message|>Hi.<|eot|>").content, "Hi.");
}

TEST(MuseGlimmerOutput, ReasoningThenAnswer) {
    const std::string text =
        " to=self<|message|>Add them: 2 + 2.<|eom|><|start|>assistant to=user<|message|>It is 4.<|eot|>";
    const auto r = parse(text);
    EXPECT_EQ(r.reasoning, "Add them: 2 + 2.");
    EXPECT_EQ(r.content, "It is 4.");
    expect_stream_equivalent(text);
}

TEST(MuseGlimmerOutput, PreambleThenToolCallIsNotSwallowedIntoContent) {
    const std::string text = " to=self<|message|>Need the weather.<|eom|><|start|>assistant to=user<|message|>Let me check."
                             "<|eom|><|start|>assistant to=get_weather<|message|>" +
                             kWeatherCall + "<|eot|>";
    const auto r = parse(text);
    EXPECT_EQ(r.reasoning, "Need the weather.");
    EXPECT_EQ(r.content, "Let me check.");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0], (ToolCall{"", "get_weather", R"({"city":"Paris","days":3})"}));
    expect_stream_equivalent(text);
}

TEST(MuseGlimmerOutput, ParallelCallsAndHiddenEndTokens) {
    const std::string second =
        "<atem:function_calls>\n<atem:invoke name=\"get_time\">\n"
        "<atem:parameter name=\"zone\">Europe/Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
    const std::string text = " to=get_weather<|message|>" + kWeatherCall + "<|eom|><|start|>assistant to=get_time<|message|>" +
                             second + "<|eot|>";
    const auto r = parse(text);
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[0].name, "get_weather");
    EXPECT_EQ(r.tool_calls[1], (ToolCall{"", "get_time", R"({"zone":"Europe/Paris"})"}));
    EXPECT_EQ(r.content, "");
    expect_stream_equivalent(text);
    // <|eom|> and <|eot|> are control tokens a detokenizer may leave out:
    // "<|start|>" alone separates the messages.
    const std::string hidden = " to=get_weather<|message|>" + kWeatherCall + "<|start|>assistant to=get_time<|message|>" + second;
    const auto h = parse(hidden);
    EXPECT_EQ(h.tool_calls, r.tool_calls);
    EXPECT_EQ(h.content, "");
    expect_stream_equivalent(hidden);
}

TEST(MuseGlimmerOutput, MarkupOutsideAToolMessageStaysWhereItWas) {
    const std::string text = " to=self<|message|>Maybe " + kWeatherCall + "<|eom|><|start|>assistant to=user<|message|>Write " +
                             kWeatherCall + " to call it.<|eot|>";
    const auto r = parse(text);
    EXPECT_EQ(r.reasoning, "Maybe " + kWeatherCall);
    EXPECT_EQ(r.content, "Write " + kWeatherCall + " to call it.");
    EXPECT_TRUE(r.tool_calls.empty());
    expect_stream_equivalent(text);
}

TEST(MuseGlimmerOutput, ParameterValuesAreRawStringsOrJson) {
    const std::string text =
        " to=f<|message|><atem:function_calls>\n<atem:invoke name=\"f\">\n"
        "<atem:parameter name=\"s\">  two words </atem:parameter>\n"
        "<atem:parameter name=\"o\">{\"a\": [1, 2]}</atem:parameter>\n"
        "<atem:parameter name=\"b\">true</atem:parameter>\n"
        "<atem:parameter name=\"n\">null</atem:parameter>\n"
        "<atem:parameter name=\"q\">\"quoted\"</atem:parameter>\n"
        "<atem:parameter name=\"m\">line 1\nline 2</atem:parameter>\n"
        "</atem:invoke>\n</atem:function_calls>";
    const auto r = parse(text);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments,
              R"({"s":"  two words ","o":{"a":[1,2]},"b":true,"n":null,"q":"\"quoted\"","m":"line 1\nline 2"})");
}

TEST(MuseGlimmerOutput, BrokenCallStaysAsContent) {
    const std::string broken = "<atem:function_calls>\n<atem:invoke name=\"f\">\n<atem:parameter name=\"x\">1";
    const std::string text = " to=f<|message|>" + broken + "<|eot|>";
    const auto r = parse(text);
    EXPECT_TRUE(r.tool_calls.empty());
    EXPECT_EQ(r.content, broken);
    expect_stream_equivalent(text);
    // Text after the block is not ATEM either.
    EXPECT_TRUE(parse(" to=get_weather<|message|>" + kWeatherCall + " and more").tool_calls.empty());
    // A call whose closing tag was cut off by the end of the output still counts.
    const std::string cut = kWeatherCall.substr(0, kWeatherCall.size() - std::string("</atem:function_calls>").size());
    EXPECT_EQ(parse(" to=get_weather<|message|>" + cut).tool_calls.size(), 1u);
}

TEST(MuseGlimmerOutput, OutputWithoutAHeaderIsContent) {
    EXPECT_EQ(parse("Just text.").content, "Just text.");
    expect_stream_equivalent("Just text.");
    // An unfinished header is no text.
    EXPECT_EQ(parse(" to=us").content, "");
    // The output may repeat the prompt's "<|start|>assistant".
    EXPECT_EQ(parse("<|start|>assistant to=user<|message|>Hi.").content, "Hi.");
}

std::string read_text(const std::string& rel) {
    std::ifstream in(cria::test::data_path(rel), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(MuseGlimmerOutput, TheTemplateIsDetectedAndItsAssistantMessagesParseBack) {
    const std::string source = read_text("chat-templates/muse-glimmer.jinja");
    ASSERT_FALSE(source.empty());
    EXPECT_EQ(cria::chat::detect_output_format(source), kMuse);
    EXPECT_EQ(cria::chat::output_format_from_name("muse-glimmer"), kMuse);

    // What the template writes for an assistant turn with reasoning and two
    // calls is what the parser reads back (from after "<|start|>assistant").
    cria::chat::ChatTemplateInputs in;
    in.bos_token = "<s>";
    in.now = 0;
    in.messages = nlohmann::ordered_json::parse(R"([
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "reasoning_content": "Two tools.", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}},
            {"type": "function", "function": {"name": "get_time", "arguments": {"zone": "Europe/Paris", "utc": false}}}]}
    ])");
    const std::string prompt = cria::chat::render_chat_template(source, in);
    const std::string start = "<|start|>assistant";
    const size_t at = prompt.find(start);
    ASSERT_NE(at, std::string::npos) << prompt;
    const auto r = parse(prompt.substr(at + start.size()));
    EXPECT_EQ(r.reasoning, "Two tools.");
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.tool_calls.size(), 2u) << prompt;
    EXPECT_EQ(r.tool_calls[0], (ToolCall{"", "get_weather", R"({"city":"Paris","days":3})"}));
    EXPECT_EQ(r.tool_calls[1], (ToolCall{"", "get_time", R"({"zone":"Europe/Paris","utc":false})"}));

    // The generation prompt is just "<|start|>assistant": the model writes the header.
    in.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
    in.add_generation_prompt = true;
    const std::string gen = cria::chat::render_chat_template(source, in);
    EXPECT_EQ(gen.substr(gen.size() - start.size()), start);
}

}  // namespace
