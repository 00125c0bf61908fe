// Pure parts of the server: slot file names, SSE framing, request
// validation and error shapes.
#include <gtest/gtest.h>

#include "server/api.h"
#include "cria/core/error.h"
#include "cria/server/slot_files.h"
#include "server/sse.h"
#include "server/stop_strings.h"

using namespace cria::server;

TEST(SlotFiles, AcceptsPlainNames) {
    EXPECT_TRUE(is_valid_slot_filename("slot0.bin"));
    EXPECT_TRUE(is_valid_slot_filename("a-b_c.D9"));
    EXPECT_TRUE(is_valid_slot_filename(std::string(128, 'x')));
}

TEST(SlotFiles, RejectsTraversalAndOddNames) {
    for (const char* bad : {"", ".", "..", "../x", "a/b", "/etc/passwd", ".hidden", "a\\b", "a b", "x\n", "%2e%2e"})
        EXPECT_FALSE(is_valid_slot_filename(bad)) << bad;
    EXPECT_FALSE(is_valid_slot_filename(std::string(129, 'x')));
    EXPECT_FALSE(is_valid_slot_filename(std::string("a\0b", 3)));
    EXPECT_THROW(slot_file_path("/tmp", "../etc"), cria::Error);
    EXPECT_THROW(slot_file_path("", "ok.bin"), cria::Error);
    EXPECT_EQ(slot_file_path("/tmp/s", "ok.bin"), "/tmp/s/ok.bin");
    EXPECT_EQ(slot_file_path("/tmp/s/", "ok.bin"), "/tmp/s/ok.bin");
}

TEST(Sse, FramesEventsAndSplitsLines) {
    EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
    EXPECT_EQ(sse_event("x", "ping"), "event: ping\ndata: x\n\n");
    EXPECT_EQ(sse_event("a\nb"), "data: a\ndata: b\n\n");
}

namespace {
int status_of(const std::function<void()>& f, std::string* param = nullptr) {
    try {
        f();
    } catch (const ApiError& e) {
        if (param) *param = e.param();
        return e.status();
    }
    return 0;
}
}  // namespace

TEST(OpenAIRequest, ParsesMessagesSamplingAndFormat) {
    const auto body = json::parse(R"({"model":"m","messages":[{"role":"developer","content":"sys"},
        {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
        "temperature":0.5,"top_p":0.9,"seed":7,"max_completion_tokens":12,"stop":"END",
        "logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},
        "response_format":{"type":"json_object"}})");
    ChatJob job = parse_openai_chat(body);
    EXPECT_EQ(job.model, "m");
    ASSERT_EQ(job.messages.size(), 2u);
    EXPECT_EQ(job.messages[0]["role"], "system");
    EXPECT_EQ(job.messages[1]["content"], "ab");
    EXPECT_FLOAT_EQ(job.gen.sampling.temp, 0.5f);
    EXPECT_FLOAT_EQ(job.gen.sampling.top_p, 0.9f);
    EXPECT_EQ(job.gen.sampling.seed, 7u);
    EXPECT_EQ(job.gen.max_tokens, 12);
    EXPECT_EQ(job.gen.stop, std::vector<std::string>{"END"});
    EXPECT_EQ(job.gen.top_logprobs, 3);
    EXPECT_TRUE(job.stream && job.include_usage && job.logprobs);
    EXPECT_TRUE(job.response_schema.is_object());
}

TEST(OpenAIRequest, WrongTypesAre400WithTheField) {
    std::string param;
    auto chat = [](const char* text) { return [text] { parse_openai_chat(json::parse(text)); }; };
    EXPECT_EQ(status_of(chat(R"({})"), &param), 400);
    EXPECT_EQ(param, "messages");
    EXPECT_EQ(status_of(chat(R"({"messages":"hi"})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"wizard","content":"x"}]})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":5}]})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})"), &param), 400);
    EXPECT_EQ(param, "temperature");
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"temperature":3})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-1})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1.5})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"n":17})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"tools":{}})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})")), 400);
    EXPECT_EQ(status_of(chat(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"abc":1}})")), 400);
    EXPECT_EQ(status_of([] { parse_body("{oops"); }), 400);
    EXPECT_EQ(status_of([] { parse_body("[1,2]"); }), 400);
}

TEST(AnthropicRequest, ConvertsBlocksToolUseAndResults) {
    const auto body = json::parse(R"({"model":"m","max_tokens":9,"system":"be brief","stop_sequences":["X"],
        "messages":[{"role":"user","content":"weather?"},
          {"role":"assistant","content":[{"type":"text","text":"let me"},{"type":"tool_use","id":"t1","name":"w","input":{"c":"P"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny"}]}],
        "tools":[{"name":"w","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}})");
    ChatJob job = parse_anthropic_messages(body);
    ASSERT_EQ(job.messages.size(), 4u);
    EXPECT_EQ(job.messages[0]["role"], "system");
    EXPECT_EQ(job.messages[2]["tool_calls"][0]["function"]["arguments"]["c"], "P");
    EXPECT_EQ(job.messages[3]["role"], "tool");
    EXPECT_EQ(job.messages[3]["content"], "sunny");
    EXPECT_EQ(job.tools[0]["function"]["name"], "w");
    EXPECT_EQ(job.tool_choice, "required");
    EXPECT_EQ(job.gen.max_tokens, 9);
    EXPECT_EQ(job.gen.stop, std::vector<std::string>{"X"});
}

TEST(AnthropicRequest, MissingFieldsAre400) {
    EXPECT_EQ(status_of([] { parse_anthropic_messages(json::parse(R"({"messages":[{"role":"user","content":"x"}]})")); }), 400);
    EXPECT_EQ(status_of([] { parse_anthropic_messages(json::parse(R"({"max_tokens":5})")); }), 400);
    EXPECT_EQ(status_of([] { parse_anthropic_messages(json::parse(R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})")); }), 400);
    EXPECT_EQ(status_of([] { parse_anthropic_messages(json::parse(R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]})")); }), 400);
}

TEST(ErrorBody, HasEachApisShape) {
    const auto o = json::parse(error_body(Dialect::OpenAI, 400, "invalid_request_error", "bad", "messages"));
    EXPECT_EQ(o["error"]["message"], "bad");
    EXPECT_EQ(o["error"]["type"], "invalid_request_error");
    EXPECT_EQ(o["error"]["param"], "messages");
    const auto a = json::parse(error_body(Dialect::Anthropic, 401, "", "no key"));
    EXPECT_EQ(a["type"], "error");
    EXPECT_EQ(a["error"]["type"], "authentication_error");
    EXPECT_EQ(a["error"]["message"], "no key");
    EXPECT_EQ(anthropic_error_type(529), "overloaded_error");
    EXPECT_EQ(anthropic_error_type(413), "request_too_large");
}

TEST(OpenAIRequest, SpeculativeSettingsInBothSpellings) {
    auto chat = [](const std::string& extra) {
        std::string body = R"({"messages":[{"role":"user","content":"x"}])";
        body.append(extra).append("}");
        return parse_openai_chat(json::parse(body));
    };
    EXPECT_FALSE(chat("").gen.speculative.given);
    // llama-server's flat fields.
    const auto flat = chat(R"(,"speculative.n_max":8,"speculative.n_min":2,"speculative.p_min":0.5)").gen.speculative;
    EXPECT_TRUE(flat.given);
    EXPECT_EQ(flat.n_max, 8);
    EXPECT_EQ(flat.n_min, 2);
    EXPECT_FLOAT_EQ(flat.p_min, 0.5f);
    // cria's object; type names are normalised to the flag spelling.
    const auto obj = chat(R"(,"speculative":{"type":"ngram_simple","n_max":4})").gen.speculative;
    EXPECT_EQ(obj.type, "ngram-simple");
    EXPECT_EQ(obj.n_max, 4);
    EXPECT_EQ(obj.n_min, -1);
    EXPECT_EQ(chat(R"(,"speculative":{"type":"none"})").gen.speculative.type, "none");
    // Completions and Anthropic messages read them too.
    GenerationRequest gen;
    parse_openai_sampling(json::parse(R"({"speculative.n_max":3})"), gen, false);
    EXPECT_EQ(gen.speculative.n_max, 3);
    EXPECT_EQ(parse_anthropic_messages(json::parse(
                  R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"speculative":{"n_max":6}})"))
                  .gen.speculative.n_max,
              6);

    std::string param;
    auto bad = [&](const std::string& extra) { return status_of([&] { chat(extra); }, &param); };
    EXPECT_EQ(bad(R"(,"speculative.n_max":"many")"), 400);
    EXPECT_EQ(param, "speculative.n_max");
    EXPECT_EQ(bad(R"(,"speculative.n_max":-1)"), 400);
    EXPECT_EQ(bad(R"(,"speculative.n_max":1000)"), 400);
    EXPECT_EQ(bad(R"(,"speculative.p_min":1.5)"), 400);
    EXPECT_EQ(param, "speculative.p_min");
    EXPECT_EQ(bad(R"(,"speculative.n_min":5,"speculative.n_max":2)"), 400);
    EXPECT_EQ(param, "speculative.n_min");
    EXPECT_EQ(bad(R"(,"speculative":5)"), 400);
    EXPECT_EQ(bad(R"(,"speculative":{"type":"telepathy"})"), 400);
    EXPECT_EQ(param, "speculative.type");
    EXPECT_EQ(bad(R"(,"speculative":{"n_maximum":3})"), 400);
    EXPECT_EQ(bad(R"(,"speculative":{"n_max":3},"speculative.n_max":3)"), 400);
}

TEST(StopStrings, HoldBackAPossibleStartAndCutAtTheEarliestStop) {
    using cria::server::scan_stop_strings;
    const std::vector<std::string> stops = {"world", "!!"};
    auto s = scan_stop_strings("Hello wor", 0, stops, false);
    EXPECT_EQ(s.upto, 6u);  // "wor" may still become "world"
    EXPECT_EQ(s.cut, std::string::npos);
    s = scan_stop_strings("Hello wor", 0, stops, true);
    EXPECT_EQ(s.upto, 9u);  // at the end nothing can grow any more
    s = scan_stop_strings("Hello world!!", 6, stops, false);
    EXPECT_EQ(s.cut, 6u);
    EXPECT_EQ(s.word, "world");
    EXPECT_EQ(s.upto, 6u);
    s = scan_stop_strings("a!", 2, stops, false);
    EXPECT_EQ(s.upto, 2u);  // never before what was sent
}
