#pragma once
// OpenAI's Responses API (POST /v1/responses) on top of the chat machinery:
// a request becomes chat messages and a ChatJob (as llama-server converts it
// to a chat completion), and the generation is written back as a "response"
// object with output items, or as the stream of typed events OpenAI sends.
#include <functional>
#include <optional>
#include <string>

#include "api.h"
#include "responses.h"

namespace cria::server {

struct ResponsesJob {
    ChatJob chat;              // the request as a chat completion (history, instructions and input)
    json conversation;         // chat messages to keep for a follow-up: history + this input (no instructions)
    std::string previous_response_id;
    bool store = true;
    json echo;                 // request settings the response object repeats (instructions, tools, ...)
};

// Finds the conversation kept under a response id (none: unknown or evicted).
using ConversationLookup = std::function<std::optional<json>(const std::string& id)>;

// `input` (a string, or an array of message / function_call /
// function_call_output items) as chat messages; a 400 names what is wrong.
json responses_input_messages(const json& input);

// The whole request; an unknown previous_response_id is a 404 (as OpenAI).
ResponsesJob parse_openai_responses(const json& body, const ConversationLookup& lookup,
                                    const sampling::SamplingParams& defaults = {});

struct ResponseIds {
    std::string id;  // resp_...
    long long created = 0;
    std::string model;
};

// Tool calls the model made without an id get one (call_...), so the output
// item and the stored conversation name the same call.
void name_tool_calls(std::vector<chat::ToolCall>& calls);

// The output items of a finished generation (reasoning, message, function calls).
json response_output_items(const Collected& c);
// The assistant message the reply adds to the conversation.
json response_reply_message(const Collected& c);
// "completed", or "incomplete" when the generation hit its token limit.
std::string response_status(const Collected& c);
json responses_usage(const Usage& u);

// The response object; `status` "in_progress" has no usage yet (`usage` null).
json response_object(const ResponseIds& ids, const json& echo, const std::string& status, const json& output,
                     const Usage* usage);

// The streamed events, each "event: TYPE" with a JSON body carrying "type"
// and a "sequence_number" counting from 0.
class ResponsesStream {
public:
    ResponsesStream(ResponseIds ids, json echo) : ids_(std::move(ids)), echo_(std::move(echo)) {}
    std::string start();  // response.created, response.in_progress
    // Text, reasoning and tool calls as they are parsed; records the
    // calls (named) and text in `collected`.
    std::string delta(const chat::OutputDelta& d, Collected& collected);
    // Closes the open item, then response.completed or response.incomplete.
    std::string finish(const Collected& c);
    std::string error(int status, const std::string& message);  // error, then response.failed

private:
    std::string event(const std::string& type, json body);
    std::string open_item(json item);
    std::string close_item();
    ResponseIds ids_;
    json echo_;
    json output_ = json::array();
    int64_t sequence_ = 0;
    std::string open_;  // "message", "reasoning" or "" (none open)
    std::string text_;  // of the open item
};

}  // namespace cria::server
