// OpenAI Responses API: request translation, the kept conversations' bounds,
// the event stream's shape, and the route end to end on a tiny model.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <sstream>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "server/response_store.h"
#include "server/responses_api.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

ConversationLookup no_conversations() {
    return [](const std::string&) { return std::optional<json>(); };
}

int status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ApiError& e) {
        return e.status();
    }
    return 200;
}

// "event: T\ndata: {...}\n\n" blocks -> (event name, body) pairs.
std::vector<std::pair<std::string, json>> parse_events(const std::string& sse) {
    std::vector<std::pair<std::string, json>> out;
    std::istringstream in(sse);
    std::string line, name;
    while (std::getline(in, line)) {
        if (line.rfind("event: ", 0) == 0) name = line.substr(7);
        if (line.rfind("data: ", 0) == 0) out.emplace_back(name, json::parse(line.substr(6)));
    }
    return out;
}

}  // namespace

TEST(ResponsesInput, TextIsOneUserMessage) {
    const json m = responses_input_messages("Hello");
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0]["role"], "user");
    EXPECT_EQ(m[0]["content"], "Hello");
}

TEST(ResponsesInput, ItemsBecomeChatMessagesAndCallsOfOneTurnShareAMessage) {
    const json input = json::parse(R"([
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in "}, {"type": "input_text", "text": "Bath?"}]},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Bath\"}"},
        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": "{\"city\":\"London\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "rain"},
        {"type": "reasoning", "summary": []}
    ])");
    const json m = responses_input_messages(input);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m[0]["role"], "system");
    EXPECT_EQ(m[1]["content"], "Weather in Bath?");
    EXPECT_EQ(m[2]["role"], "assistant");
    ASSERT_EQ(m[2]["tool_calls"].size(), 2u);
    EXPECT_EQ(m[2]["tool_calls"][1]["id"], "c2");
    EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Bath\"}");
    EXPECT_EQ(m[3]["role"], "tool");
    EXPECT_EQ(m[3]["tool_call_id"], "c1");
    EXPECT_EQ(m[3]["content"], "rain");
}

TEST(ResponsesInput, WhatIsNotServedIsRefusedByName) {
    EXPECT_EQ(status_of([] { responses_input_messages(42); }), 400);
    EXPECT_EQ(status_of([] { responses_input_messages(json::parse(R"([{"type": "web_search_call"}])")); }), 400);
    EXPECT_EQ(status_of([] {
                  responses_input_messages(json::parse(R"([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}])"));
              }),
              400);
    EXPECT_EQ(status_of([] { responses_input_messages(json::parse(R"([{"type": "function_call", "name": "f"}])")); }), 400);
    EXPECT_EQ(status_of([] { responses_input_messages(json::parse(R"([{"role": "wizard", "content": "x"}])")); }), 400);
}

TEST(ResponsesRequest, InstructionsLeadHistoryFollowsAndOnlyTheConversationIsKept) {
    const json history = json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])");
    const json body = json::parse(R"({"model": "any", "instructions": "Talk like a pirate.", "input": "And you?",
        "previous_response_id": "resp_1", "max_output_tokens": 7, "temperature": 0.5,
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "f"}})");
    const ResponsesJob job = parse_openai_responses(body, [&](const std::string& id) {
        return id == "resp_1" ? std::optional<json>(history) : std::nullopt;
    });
    ASSERT_EQ(job.chat.messages.size(), 4u);
    EXPECT_EQ(job.chat.messages[0]["role"], "system");
    EXPECT_EQ(job.chat.messages[0]["content"], "Talk like a pirate.");
    EXPECT_EQ(job.chat.messages[2]["content"], "Hello!");
    EXPECT_EQ(job.chat.messages[3]["content"], "And you?");
    ASSERT_EQ(job.conversation.size(), 3u);  // instructions are this response's only
    EXPECT_EQ(job.chat.gen.max_tokens, 7);
    EXPECT_FLOAT_EQ(job.chat.gen.sampling.temp, 0.5f);
    EXPECT_EQ(job.chat.tools[0]["function"]["name"], "f");
    EXPECT_EQ(job.chat.tool_choice, "f");
    EXPECT_EQ(job.echo["previous_response_id"], "resp_1");
    EXPECT_EQ(job.echo["instructions"], "Talk like a pirate.");
    EXPECT_TRUE(job.store);
}

TEST(ResponsesRequest, BadRequestsAreRefused) {
    auto parse = [](const char* text) {
        return status_of([&] { parse_openai_responses(json::parse(text), no_conversations()); });
    };
    EXPECT_EQ(parse(R"({"input": "x", "previous_response_id": "resp_gone"})"), 404);
    EXPECT_EQ(parse(R"({"model": "m"})"), 400);
    EXPECT_EQ(parse(R"({"input": "x", "tools": [{"type": "web_search"}]})"), 400);
    EXPECT_EQ(parse(R"({"input": "x", "store": "yes"})"), 400);
    EXPECT_EQ(parse(R"({"input": "x", "n": 2})"), 400);
    EXPECT_EQ(parse(R"({"input": "x", "background": true})"), 400);
    EXPECT_EQ(parse(R"({"input": "x", "background": false})"), 200);
    EXPECT_EQ(parse(R"({"input": "x", "text": {"format": {"type": "json_schema"}}})"), 400);
    EXPECT_EQ(parse(R"({"input": [], "instructions": ""})"), 400);  // nothing to answer
    EXPECT_EQ(parse(R"({"input": "x", "max_output_tokens": -3})"), 400);
}

TEST(ResponsesRequest, TextFormatBecomesAResponseSchema) {
    const ResponsesJob job = parse_openai_responses(
        json::parse(R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}}})"),
        no_conversations());
    EXPECT_EQ(job.chat.response_schema, json::parse(R"({"type": "object"})"));
}

TEST(ResponseStoreBounds, LeastRecentlyUsedGoesFirstByCount) {
    ResponseStore store(2, 1 << 20);
    store.put("a", json::array({"1"}));
    store.put("b", json::array({"2"}));
    ASSERT_TRUE(store.get("a"));  // a is now the most recent
    store.put("c", json::array({"3"}));
    EXPECT_TRUE(store.get("a"));
    EXPECT_FALSE(store.get("b"));
    EXPECT_TRUE(store.get("c"));
    EXPECT_EQ(store.count(), 2u);
}

TEST(ResponseStoreBounds, BytesBoundEvictsAndOversizedIsNotKept) {
    ResponseStore store(100, 64);
    store.put("a", json::array({std::string(20, 'x')}));
    store.put("b", json::array({std::string(20, 'y')}));
    store.put("c", json::array({std::string(20, 'z')}));  // 3 x ~25 bytes > 64
    EXPECT_FALSE(store.get("a"));
    EXPECT_TRUE(store.get("c"));
    EXPECT_LE(store.bytes(), 64u);
    store.put("huge", json::array({std::string(100, 'h')}));
    EXPECT_FALSE(store.get("huge"));
    store.put("c", json::array({"short"}));  // replacing keeps one entry
    EXPECT_EQ(*store.get("c"), json::array({"short"}));
}

TEST(ResponsesStreamEvents, TextThenCompletedInOpenAIsOrderWithCountingSequenceNumbers) {
    ResponsesStream w({"resp_x", 1, "m"}, json::object());
    Collected c;
    std::string sse = w.start();
    cria::chat::OutputDelta d1, d2;
    d1.content = "Hel";
    d2.content = "lo";
    sse += w.delta(d1, c);
    sse += w.delta(d2, c);
    c.finish_reason = "stop";
    c.usage.prompt = 5;
    c.usage.completion = 2;
    sse += w.finish(c);
    const auto events = parse_events(sse);
    const std::vector<std::string> expected = {"response.created", "response.in_progress", "response.output_item.added",
                                               "response.content_part.added", "response.output_text.delta",
                                               "response.output_text.delta", "response.output_text.done",
                                               "response.content_part.done", "response.output_item.done",
                                               "response.completed"};
    ASSERT_EQ(events.size(), expected.size());
    for (size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i].first, expected[i]);
        EXPECT_EQ(events[i].second["type"], expected[i]);
        EXPECT_EQ(events[i].second["sequence_number"], i);
    }
    EXPECT_EQ(c.content, "Hello");
    EXPECT_EQ(events[6].second["text"], "Hello");
    const json& r = events.back().second["response"];
    EXPECT_EQ(r["status"], "completed");
    EXPECT_EQ(r["output"][0]["content"][0]["text"], "Hello");
    EXPECT_EQ(r["output"][0]["status"], "completed");
    EXPECT_EQ(r["usage"]["total_tokens"], 7);
}

TEST(ResponsesStreamEvents, ToolCallsAreFunctionCallItemsAndLengthIsIncomplete) {
    ResponsesStream w({"resp_x", 1, "m"}, json::object());
    Collected c;
    std::string sse = w.start();
    cria::chat::OutputDelta d;
    d.tool_calls.push_back({"", "get_weather", "{\"city\":\"Bath\"}"});
    sse += w.delta(d, c);
    c.finish_reason = "length";
    sse += w.finish(c);
    const auto events = parse_events(sse);
    ASSERT_EQ(events.size(), 7u);
    EXPECT_EQ(events[2].first, "response.output_item.added");
    EXPECT_EQ(events[2].second["item"]["type"], "function_call");
    EXPECT_EQ(events[3].first, "response.function_call_arguments.delta");
    EXPECT_EQ(events[4].first, "response.function_call_arguments.done");
    EXPECT_EQ(events[5].first, "response.output_item.done");
    EXPECT_EQ(events[6].first, "response.incomplete");
    const json& item = events[6].second["response"]["output"][0];
    EXPECT_EQ(item["arguments"], "{\"city\":\"Bath\"}");
    ASSERT_EQ(c.calls.size(), 1u);
    EXPECT_EQ(item["call_id"], c.calls[0].id);  // named, and the same name kept for the conversation
    EXPECT_EQ(c.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_EQ(events[6].second["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

namespace {

std::unique_ptr<Server> make_server(size_t keep = 1024) {
    std::signal(SIGPIPE, SIG_IGN);
    RuntimeBackendParams bp;
    bp.n_seq = 1;
    bp.n_ctx = 512;
    bp.n_threads = 1;
    const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
    ServerConfig config;
    config.port = 0;
    config.model_path = path;
    config.responses_max_count = keep;
    auto server = std::make_unique<Server>(std::make_unique<RuntimeBackend>(path, bp), config);
    server->start();
    return server;
}

httplib::Result post(Server& s, const json& body) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(30, 0);
    return c.Post("/v1/responses", body.dump(), "application/json");
}

}  // namespace

TEST(ResponsesRoute, StreamingEqualsNonStreamingAndConversationsContinue) {
    auto server = make_server(1);
    const json ask = {{"model", "gpt-4.1"}, {"input", "Once upon a time"}, {"max_output_tokens", 6}, {"temperature", 0}};
    auto r = post(*server, ask);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json whole = json::parse(r->body);
    EXPECT_EQ(whole["object"], "response");
    EXPECT_EQ(whole["model"], "stories260K.gguf");
    EXPECT_EQ(whole["status"], "incomplete");
    EXPECT_EQ(whole["usage"]["output_tokens"], 6);
    const std::string text = whole["output"][0]["content"][0]["text"];
    EXPECT_FALSE(text.empty());

    json streamed = ask;
    streamed["stream"] = true;
    r = post(*server, streamed);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    const auto events = parse_events(r->body);
    ASSERT_GE(events.size(), 8u);
    EXPECT_EQ(events.front().first, "response.created");
    EXPECT_EQ(events.back().first, "response.incomplete");
    std::string deltas;
    for (size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i].second["sequence_number"], i);
        if (events[i].first == "response.output_text.delta") deltas += events[i].second["delta"].get<std::string>();
    }
    EXPECT_EQ(deltas, text);

    // A follow-up carries the first exchange: its prompt is longer by it.
    const std::string first_id = events.back().second["response"]["id"];
    r = post(*server, {{"input", "Once upon a time"}, {"previous_response_id", first_id}, {"max_output_tokens", 2}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json second = json::parse(r->body);
    EXPECT_GT(second["usage"]["input_tokens"].get<int>(), whole["usage"]["input_tokens"].get<int>() + 5);
    EXPECT_EQ(second["previous_response_id"], first_id);

    // The store keeps one conversation: the first is gone now.
    r = post(*server, {{"input", "x"}, {"previous_response_id", first_id}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "previous_response_id");

    // store: false keeps nothing.
    r = post(*server, {{"input", "Hi"}, {"max_output_tokens", 1}, {"store", false}});
    ASSERT_TRUE(r);
    const std::string unstored = json::parse(r->body)["id"];
    r = post(*server, {{"input", "x"}, {"previous_response_id", unstored}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
}
