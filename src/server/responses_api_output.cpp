// The Responses API's response object and its stream of events (see responses_api.h).
#include "responses_api.h"

#include "sse.h"

namespace cria::server {

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json output_text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json message_item(const std::string& id, const std::string& status, json content) {
    return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

json reasoning_item(const std::string& id, json content) {
    return {{"id", id}, {"type", "reasoning"}, {"summary", json::array()}, {"content", std::move(content)}};
}

json reasoning_text_part(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

json function_call_item(const chat::ToolCall& call, const std::string& status) {
    return {{"id", random_id("fc_")}, {"type", "function_call"}, {"status", status},
            {"arguments", call.arguments},  {"call_id", call.id},      {"name", call.name}};
}

}  // namespace

void name_tool_calls(std::vector<chat::ToolCall>& calls) {
    for (auto& c : calls)
        if (c.id.empty()) c.id = random_id("call_");
}

std::string response_status(const Collected& c) { return c.finish_reason == "length" ? "incomplete" : "completed"; }

json response_output_items(const Collected& c) {
    json out = json::array();
    if (!c.reasoning.empty()) out.push_back(reasoning_item(random_id("rs_"), json::array({reasoning_text_part(c.reasoning)})));
    if (!c.content.empty() || c.calls.empty())
        out.push_back(message_item(random_id("msg_"), response_status(c), json::array({output_text_part(c.content)})));
    for (const auto& call : c.calls) out.push_back(function_call_item(call, "completed"));
    return out;
}

json response_reply_message(const Collected& c) {
    json m = {{"role", "assistant"}, {"content", c.content}};
    if (!c.calls.empty()) {
        json calls = json::array();
        for (const auto& call : c.calls)
            calls.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        m["tool_calls"] = calls;
    }
    return m;
}

json responses_usage(const Usage& u) {
    return {{"input_tokens", u.prompt},
            {"input_tokens_details", {{"cached_tokens", u.cached}}},
            {"output_tokens", u.completion},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", u.prompt + u.completion}};
}

json response_object(const ResponseIds& ids, const json& echo, const std::string& status, const json& output,
                     const Usage* usage) {
    json r = {{"id", ids.id},
              {"object", "response"},
              {"created_at", ids.created},
              {"status", status},
              {"error", nullptr},
              {"incomplete_details", status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json()}};
    r["instructions"] = echo.value("instructions", json());
    r["max_output_tokens"] = echo.value("max_output_tokens", json());
    r["model"] = ids.model;
    r["output"] = output;
    r["parallel_tool_calls"] = echo.value("parallel_tool_calls", false);
    r["previous_response_id"] = echo.value("previous_response_id", json());
    r["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
    r["store"] = echo.value("store", true);
    r["temperature"] = echo.value("temperature", json());
    r["text"] = echo.value("text", json{{"format", {{"type", "text"}}}});
    r["tool_choice"] = echo.value("tool_choice", json("auto"));
    r["tools"] = echo.value("tools", json::array());
    r["top_p"] = echo.value("top_p", json());
    r["truncation"] = "disabled";
    r["usage"] = usage ? responses_usage(*usage) : json();
    r["user"] = nullptr;
    r["metadata"] = echo.value("metadata", json::object());
    return r;
}

std::string ResponsesStream::event(const std::string& type, json body) {
    json ev = {{"type", type}};
    for (auto& [k, v] : body.items()) ev[k] = std::move(v);
    ev["sequence_number"] = sequence_++;
    return sse_event(dump(ev), type);
}

std::string ResponsesStream::start() {
    const json r = response_object(ids_, echo_, "in_progress", json::array(), nullptr);
    // Each event takes the next sequence number, so they are made one statement
    // at a time (the operands of + are evaluated in no set order).
    std::string out = event("response.created", {{"response", r}});
    out += event("response.in_progress", {{"response", r}});
    return out;
}

std::string ResponsesStream::open_item(json item) {
    const size_t index = output_.size();
    open_ = item["type"].get<std::string>();
    text_.clear();
    output_.push_back(item);
    std::string out = event("response.output_item.added", {{"output_index", index}, {"item", item}});
    if (open_ == "message")
        out += event("response.content_part.added", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                                     {"part", output_text_part("")}});
    return out;
}

std::string ResponsesStream::close_item() {
    if (open_.empty()) return "";
    const size_t index = output_.size() - 1;
    json& item = output_[index];
    std::string out;
    if (open_ == "message") {
        const json part = output_text_part(text_);
        out += event("response.output_text.done", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                                   {"text", text_}, {"logprobs", json::array()}});
        out += event("response.content_part.done",
                     {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}});
        item["status"] = "completed";
        item["content"] = json::array({part});
    } else {
        out += event("response.reasoning_text.done",
                     {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
        item["content"] = json::array({reasoning_text_part(text_)});
    }
    out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
    open_.clear();
    text_.clear();
    return out;
}

std::string ResponsesStream::delta(const chat::OutputDelta& d, Collected& collected) {
    std::string out;
    if (!d.reasoning.empty()) {
        if (open_ != "reasoning") {
            out += close_item();
            out += open_item(reasoning_item(random_id("rs_"), json::array()));
        }
        text_ += d.reasoning;
        collected.reasoning += d.reasoning;
        out += event("response.reasoning_text.delta", {{"item_id", output_.back()["id"]}, {"output_index", output_.size() - 1},
                                                       {"content_index", 0}, {"delta", d.reasoning}});
    }
    if (!d.content.empty()) {
        if (open_ != "message") {
            out += close_item();
            out += open_item(message_item(random_id("msg_"), "in_progress", json::array()));
        }
        text_ += d.content;
        collected.content += d.content;
        out += event("response.output_text.delta", {{"item_id", output_.back()["id"]}, {"output_index", output_.size() - 1},
                                                    {"content_index", 0}, {"delta", d.content}, {"logprobs", json::array()}});
    }
    if (!d.tool_calls.empty()) {
        out += close_item();
        std::vector<chat::ToolCall> calls = d.tool_calls;
        name_tool_calls(calls);
        for (const auto& call : calls) {
            // A call is parsed whole, so its arguments arrive as one delta.
            json item = function_call_item(call, "in_progress");
            item["arguments"] = "";
            const size_t index = output_.size();
            output_.push_back(item);
            out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
            out += event("response.function_call_arguments.delta",
                         {{"item_id", item["id"]}, {"output_index", index}, {"delta", call.arguments}});
            out += event("response.function_call_arguments.done",
                         {{"item_id", item["id"]}, {"output_index", index}, {"arguments", call.arguments}});
            output_[index]["arguments"] = call.arguments;
            output_[index]["status"] = "completed";
            out += event("response.output_item.done", {{"output_index", index}, {"item", output_[index]}});
            collected.calls.push_back(call);
        }
    }
    return out;
}

std::string ResponsesStream::finish(const Collected& c) {
    std::string out = close_item();
    if (output_.empty()) {
        out += open_item(message_item(random_id("msg_"), "in_progress", json::array()));
        out += close_item();
    }
    const std::string status = response_status(c);
    if (status == "incomplete")
        for (auto& item : output_)
            if (item["type"] == "message") item["status"] = "incomplete";
    const json r = response_object(ids_, echo_, status, output_, &c.usage);
    out += event(status == "completed" ? "response.completed" : "response.incomplete", {{"response", r}});
    return out;
}

std::string ResponsesStream::error(int status, const std::string& message) {
    const std::string type = openai_error_type(status);
    std::string out = event("error", {{"code", type}, {"message", message}, {"param", nullptr}});
    json r = response_object(ids_, echo_, "failed", output_, nullptr);
    r["error"] = {{"code", "server_error"}, {"message", message}};
    out += event("response.failed", {{"response", r}});
    return out;
}

}  // namespace cria::server
