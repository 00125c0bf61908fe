#include "responses.h"

#include <random>

#include "sse.h"

namespace cria::server {

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_json(const std::string& s) {
    json a = json::array();
    for (unsigned char c : s) a.push_back(static_cast<int>(c));
    return a;
}

json arguments_object(const std::string& args) {
    try {
        return parse_json_bounded(args);  // the model's output: as deep as it likes
    } catch (const std::exception&) {
        return json::object();
    }
}

}  // namespace

std::string random_id(const std::string& prefix, size_t n) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id = prefix;
    for (size_t i = 0; i < n; ++i) id += alphabet[rng() % (sizeof alphabet - 1)];
    return id;
}

Usage usage_of(const GenerationEvent& e) {
    return {e.n_prompt,    e.n_cached,         e.n_generated,          e.prompt_ms,
            e.generation_ms, e.n_drafted,      e.n_draft_accepted,     e.n_draft_steps,
            e.draft_position_tried, e.draft_position_accepted};
}

json timings_json(const Usage& u) {
    const double pps = u.prompt_ms > 0 ? 1000.0 * (u.prompt - u.cached) / u.prompt_ms : 0.0;
    const double gps = u.generation_ms > 0 ? 1000.0 * u.completion / u.generation_ms : 0.0;
    json t = {{"cache_n", u.cached},          {"prompt_n", u.prompt - u.cached}, {"prompt_ms", u.prompt_ms},
              {"prompt_per_second", pps},     {"predicted_n", u.completion},    {"predicted_ms", u.generation_ms},
              {"predicted_per_second", gps}};
    // As llama-server: only when something was drafted.
    if (u.drafted > 0) {
        t["draft_n"] = u.drafted;
        t["draft_n_accepted"] = u.draft_accepted;
        // cria's: llama-server has no per-position figures.
        t["draft_n_steps"] = u.draft_steps;
        t["draft_acceptance_rate"] = static_cast<double>(u.draft_accepted) / u.drafted;
        // Tokens per verify step: the accepted drafts plus the target's own token.
        t["draft_mean_acceptance_length"] =
            u.draft_steps > 0 ? static_cast<double>(u.draft_accepted + u.draft_steps) / u.draft_steps : 0.0;
        json rates = json::array();
        for (size_t i = 0; i < u.draft_position_tried.size(); ++i)
            rates.push_back(u.draft_position_tried[i] > 0 ? static_cast<double>(u.draft_position_accepted[i]) /
                                                                static_cast<double>(u.draft_position_tried[i])
                                                          : 0.0);
        t["draft_n_per_position"] = u.draft_position_tried;
        t["draft_n_accepted_per_position"] = u.draft_position_accepted;
        t["draft_acceptance_per_position"] = rates;
    }
    return t;
}

json usage_openai(const Usage& u) {
    return {{"prompt_tokens", u.prompt},
            {"completion_tokens", u.completion},
            {"total_tokens", u.prompt + u.completion},
            {"prompt_tokens_details", {{"cached_tokens", u.cached}}}};
}

json logprobs_openai_chat(const std::vector<TokenLogprob>& lps) {
    json content = json::array();
    for (const auto& lp : lps) {
        json top = json::array();
        for (const auto& t : lp.top) top.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_json(t.token)}});
        content.push_back({{"token", lp.token}, {"logprob", lp.logprob}, {"bytes", bytes_json(lp.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
}

std::string openai_finish_reason(const Collected& c) {
    if (!c.calls.empty()) return "tool_calls";
    if (c.finish_reason == "length") return "length";
    return "stop";
}

namespace {

json tool_calls_openai(const std::vector<chat::ToolCall>& calls, int first_index, bool with_index) {
    json out = json::array();
    int i = first_index;
    for (const auto& c : calls) {
        json call = {{"id", c.id.empty() ? random_id("call_") : c.id},
                     {"type", "function"},
                     {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
        if (with_index) call["index"] = i;
        ++i;
        out.push_back(call);
    }
    return out;
}

}  // namespace

json openai_chat_body(const std::string& id, long long created, const std::string& model, const Collected& c,
                      bool want_logprobs) {
    json message = {{"role", "assistant"}, {"content", c.content.empty() && !c.calls.empty() ? json() : json(c.content)}};
    if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
    if (!c.calls.empty()) message["tool_calls"] = tool_calls_openai(c.calls, 0, false);
    message["refusal"] = nullptr;
    json choice = {{"index", 0},
                   {"message", message},
                   {"logprobs", want_logprobs ? logprobs_openai_chat(c.logprobs) : json()},
                   {"finish_reason", openai_finish_reason(c)}};
    return {{"id", id},
            {"object", "chat.completion"},
            {"created", created},
            {"model", model},
            {"system_fingerprint", "cria"},
            {"choices", json::array({choice})},
            {"usage", usage_openai(c.usage)},
            {"timings", timings_json(c.usage)}};
}

json OpenAIChatStream::chunk(json delta, json finish_reason) const {
    json choice = {{"index", index_}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", std::move(finish_reason)}};
    return {{"id", id_},
            {"object", "chat.completion.chunk"},
            {"created", created_},
            {"model", model_},
            {"system_fingerprint", "cria"},
            {"choices", json::array({choice})}};
}

std::string OpenAIChatStream::start() { return sse_event(dump(chunk({{"role", "assistant"}, {"content", ""}}))); }

std::string OpenAIChatStream::delta(const chat::OutputDelta& d, const std::vector<TokenLogprob>& lps) {
    std::string out;
    if (!d.reasoning.empty()) out += sse_event(dump(chunk({{"reasoning_content", d.reasoning}})));
    if (!d.content.empty() || (logprobs_ && !lps.empty())) {
        json c = chunk({{"content", d.content}});
        if (logprobs_) c["choices"][0]["logprobs"] = logprobs_openai_chat(lps);
        out += sse_event(dump(c));
    }
    if (!d.tool_calls.empty()) {
        out += sse_event(dump(chunk({{"tool_calls", tool_calls_openai(d.tool_calls, tool_index_, true)}})));
        tool_index_ += static_cast<int>(d.tool_calls.size());
    }
    return out;
}

std::string OpenAIChatStream::finish(const Collected& c) { return finish_choice(c) + end(c.usage); }

std::string OpenAIChatStream::finish_choice(const Collected& c) {
    json last = chunk(json::object(), openai_finish_reason(c));
    last["timings"] = timings_json(c.usage);
    return sse_event(dump(last));
}

std::string OpenAIChatStream::end(const Usage& usage) {
    std::string out;
    if (include_usage_) {
        json u = chunk(json::object());
        u["choices"] = json::array();
        u["usage"] = usage_openai(usage);
        out += sse_event(dump(u));
    }
    out += sse_event("[DONE]");
    return out;
}

std::string OpenAIChatStream::error(int status, const std::string& message) {
    return sse_event(error_body(Dialect::OpenAI, status, "", message));
}

// ---------------------------------------------------------------- Anthropic

std::string anthropic_stop_reason(const Collected& c, const std::vector<std::string>& user_stops) {
    if (!c.calls.empty()) return "tool_use";
    if (c.finish_reason == "length") return "max_tokens";
    for (const auto& s : user_stops)
        if (s == c.stop_word) return "stop_sequence";
    return "end_turn";
}

namespace {

json anthropic_usage(const Usage& u) {
    return {{"input_tokens", u.prompt - u.cached}, {"cache_read_input_tokens", u.cached},
            {"cache_creation_input_tokens", 0},   {"output_tokens", u.completion}};
}

json stop_sequence_json(const Collected& c, const std::vector<std::string>& user_stops) {
    for (const auto& s : user_stops)
        if (s == c.stop_word) return s;
    return nullptr;
}

}  // namespace

json anthropic_message_body(const std::string& id, const std::string& model, const Collected& c,
                            const std::vector<std::string>& user_stops) {
    json content = json::array();
    if (!c.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", c.reasoning}, {"signature", ""}});
    if (!c.content.empty()) content.push_back({{"type", "text"}, {"text", c.content}});
    for (const auto& call : c.calls)
        content.push_back({{"type", "tool_use"},
                           {"id", call.id.empty() ? random_id("toolu_") : call.id},
                           {"name", call.name},
                           {"input", arguments_object(call.arguments)}});
    return {{"id", id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model},
            {"content", content},
            {"stop_reason", anthropic_stop_reason(c, user_stops)},
            {"stop_sequence", stop_sequence_json(c, user_stops)},
            {"usage", anthropic_usage(c.usage)}};
}

std::string AnthropicStream::start(int32_t input_tokens) {
    json message = {{"id", id_},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", model_},
                    {"content", json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 0}}}};
    return sse_event(dump({{"type", "message_start"}, {"message", message}}), "message_start") +
           sse_event(dump({{"type", "ping"}}), "ping");
}

std::string AnthropicStream::open_block(const std::string& type, json block) {
    std::string out = close_block();
    ++index_;
    open_ = type;
    out += sse_event(dump({{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}}),
                     "content_block_start");
    return out;
}

std::string AnthropicStream::close_block() {
    if (open_.empty()) return "";
    open_.clear();
    return sse_event(dump({{"type", "content_block_stop"}, {"index", index_}}), "content_block_stop");
}

std::string AnthropicStream::delta(const chat::OutputDelta& d) {
    std::string out;
    if (!d.reasoning.empty()) {
        if (open_ != "thinking") out += open_block("thinking", {{"type", "thinking"}, {"thinking", ""}});
        out += sse_event(dump({{"type", "content_block_delta"}, {"index", index_},
                               {"delta", {{"type", "thinking_delta"}, {"thinking", d.reasoning}}}}),
                         "content_block_delta");
    }
    if (!d.content.empty()) {
        if (open_ != "text") out += open_block("text", {{"type", "text"}, {"text", ""}});
        out += sse_event(dump({{"type", "content_block_delta"}, {"index", index_},
                               {"delta", {{"type", "text_delta"}, {"text", d.content}}}}),
                         "content_block_delta");
    }
    for (const auto& call : d.tool_calls) {
        out += open_block("tool_use", {{"type", "tool_use"},
                                       {"id", call.id.empty() ? random_id("toolu_") : call.id},
                                       {"name", call.name},
                                       {"input", json::object()}});
        out += sse_event(dump({{"type", "content_block_delta"}, {"index", index_},
                               {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}}),
                         "content_block_delta");
        out += close_block();
    }
    return out;
}

std::string AnthropicStream::finish(const Collected& c) {
    std::string out = close_block();
    out += sse_event(dump({{"type", "message_delta"},
                           {"delta", {{"stop_reason", anthropic_stop_reason(c, user_stops_)},
                                      {"stop_sequence", stop_sequence_json(c, user_stops_)}}},
                           {"usage", {{"output_tokens", c.usage.completion}}}}),
                     "message_delta");
    out += sse_event(dump({{"type", "message_stop"}}), "message_stop");
    return out;
}

std::string AnthropicStream::error(int status, const std::string& message) {
    return sse_event(error_body(Dialect::Anthropic, status, "", message), "error");
}

}  // namespace cria::server
