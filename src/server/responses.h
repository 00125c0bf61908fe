#pragma once
// What a finished or streaming generation looks like to each API: the
// OpenAI chat/completions objects and chunks, and the Anthropic message and
// its stream events. Writers are fed parsed deltas and return the SSE text
// to send; the same accumulated state builds the non-streaming body.
#include <string>
#include <vector>

#include "api.h"
#include "cria/chat/output_parser.h"

namespace cria::server {

struct Usage {
    int32_t prompt = 0, cached = 0, completion = 0;
    double prompt_ms = 0, generation_ms = 0;
    int32_t drafted = 0, draft_accepted = 0;  // speculative decoding
    int32_t draft_steps = 0;                  // verify steps
    std::vector<int64_t> draft_position_tried, draft_position_accepted;  // per draft position
};

// What a finished generation reports.
Usage usage_of(const GenerationEvent& done);

struct Collected {
    std::string reasoning, content;
    std::vector<chat::ToolCall> calls;
    std::vector<TokenLogprob> logprobs;
    std::string finish_reason;  // scheduler's: stop / length / cancelled
    std::string stop_word;
    int32_t slot = -1;          // the slot that served it
    bool context_shifted = false;
    int32_t n_cells = 0;        // the slot's cached tokens at the end
    Usage usage;
};

std::string random_id(const std::string& prefix, size_t n = 24);
json timings_json(const Usage& u);

// Legacy completions (api_completions.cpp): the "logprobs" object of a
// choice (text offsets from `offset`), and a response or stream chunk.
struct CompletionIds {
    std::string id;
    long long created = 0;
    std::string model;
};
json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t offset);
json completion_body(const CompletionIds& ids, const std::string& text, const json& finish, const json& logprobs);
// One item of an embeddings response: the vector as floats, or as base64 of its bytes.
json embedding_json(size_t index, const std::vector<float>& v, bool base64);
json usage_openai(const Usage& u);
json logprobs_openai_chat(const std::vector<TokenLogprob>& lps);

// OpenAI chat completion (non-streaming body).
json openai_chat_body(const std::string& id, long long created, const std::string& model, const Collected& c,
                      bool want_logprobs);
// OpenAI finish_reason for what happened.
std::string openai_finish_reason(const Collected& c);

class OpenAIChatStream {
public:
    // `index`: the choice its chunks are of (n > 1 choices stream side by side).
    OpenAIChatStream(std::string id, long long created, std::string model, bool include_usage, bool logprobs, int index = 0)
        : id_(std::move(id)), created_(created), model_(std::move(model)), include_usage_(include_usage), logprobs_(logprobs),
          index_(index) {}
    std::string start();
    std::string delta(const chat::OutputDelta& d, const std::vector<TokenLogprob>& lps);
    std::string finish(const Collected& c);  // finish_choice(c) + end(c.usage)
    std::string finish_choice(const Collected& c);  // the choice's last chunk (finish_reason, timings)
    std::string end(const Usage& usage);           // the usage chunk (if asked) and [DONE]
    std::string error(int status, const std::string& message);

private:
    json chunk(json delta, json finish_reason = nullptr) const;
    std::string id_;
    long long created_;
    std::string model_;
    bool include_usage_, logprobs_;
    int index_ = 0;
    int tool_index_ = 0;
};

// Anthropic
json anthropic_message_body(const std::string& id, const std::string& model, const Collected& c,
                            const std::vector<std::string>& user_stops);
std::string anthropic_stop_reason(const Collected& c, const std::vector<std::string>& user_stops);

class AnthropicStream {
public:
    AnthropicStream(std::string id, std::string model, std::vector<std::string> user_stops)
        : id_(std::move(id)), model_(std::move(model)), user_stops_(std::move(user_stops)) {}
    std::string start(int32_t input_tokens);
    std::string delta(const chat::OutputDelta& d);
    std::string finish(const Collected& c);
    std::string error(int status, const std::string& message);

private:
    std::string open_block(const std::string& type, json block);
    std::string close_block();
    std::string id_, model_;
    std::vector<std::string> user_stops_;
    int index_ = -1;
    std::string open_;  // type of the open block, "" when none
};

}  // namespace cria::server
