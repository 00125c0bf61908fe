// POST /v1/responses request -> chat messages and a ChatJob (see responses_api.h).
#include "responses_api.h"

namespace cria::server {

namespace {

// Fields of a Responses request that have no chat completion counterpart, or
// one under another name; they are translated here, never passed on.
const char* const kResponsesOnlyFields[] = {"input", "instructions", "previous_response_id", "store", "max_output_tokens",
                                            "text", "tools", "tool_choice", "include", "metadata", "reasoning",
                                            "truncation", "background", "user", "messages", "n", "stream_options",
                                            "response_format", "max_tokens", "max_completion_tokens"};

std::string where_of(size_t i) { return "input[" + std::to_string(i) + "]"; }

const std::string& required_string(const json& item, const char* key, const std::string& where) {
    if (!item.contains(key) || !item[key].is_string()) throw bad_request(where + " needs a string '" + key + "'", "input");
    return item[key].get_ref<const std::string&>();
}

// A message's content: a string, or parts of type input_text / output_text
// (text is all the templates take; images and files are refused by name).
json message_content(const json& content, const std::string& where) {
    if (content.is_string()) return content;
    if (!content.is_array()) throw bad_request(where + ": content must be a string or an array of parts", "input");
    std::string text;
    for (const auto& part : content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            throw bad_request(where + ": every content part needs a 'type'", "input");
        const std::string type = part["type"].get<std::string>();
        if (type != "input_text" && type != "output_text" && type != "text")
            throw bad_request(where + ": content parts of type '" + type + "' are not supported", "input");
        text += required_string(part, "text", where);
    }
    return text;
}

// Responses tools are flat ({"type": "function", "name", "parameters"});
// chat tools nest the function. Built-in tools (web search, files) are not served.
json chat_tools(const json& tools) {
    if (!tools.is_array()) throw bad_request("'tools' must be an array", "tools");
    json out = json::array();
    for (const auto& t : tools) {
        if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
            throw bad_request("every tool needs a 'type'", "tools");
        if (t["type"] != "function")
            throw bad_request("tools of type '" + t["type"].get<std::string>() + "' are not supported (only function)", "tools");
        if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty())
            throw bad_request("every function tool needs a 'name'", "tools");
        json f = {{"name", t["name"]}};
        if (t.contains("description") && t["description"].is_string()) f["description"] = t["description"];
        if (t.contains("parameters") && !t["parameters"].is_null()) f["parameters"] = t["parameters"];
        out.push_back({{"type", "function"}, {"function", f}});
    }
    return out;
}

json chat_tool_choice(const json& tc) {
    if (tc.is_string()) return tc;
    if (tc.is_object() && tc.value("type", "") == "function" && tc.contains("name") && tc["name"].is_string())
        return {{"type", "function"}, {"function", {{"name", tc["name"]}}}};
    throw bad_request("'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}", "tool_choice");
}

// text.format -> chat's response_format.
json chat_response_format(const json& text) {
    if (!text.is_object()) throw bad_request("'text' must be an object", "text");
    if (!text.contains("format") || text["format"].is_null()) return json();
    const json& f = text["format"];
    if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
        throw bad_request("'text.format' must be an object with a 'type'", "text");
    const std::string type = f["type"].get<std::string>();
    if (type == "text" || type == "json_object") return {{"type", type}};
    if (type == "json_schema") {
        if (!f.contains("schema") || !f["schema"].is_object())
            throw bad_request("'text.format.schema' must be an object", "text");
        return {{"type", "json_schema"}, {"json_schema", {{"name", f.value("name", "response")}, {"schema", f["schema"]}}}};
    }
    throw bad_request("'text.format.type' must be text, json_object or json_schema", "text");
}

const json* present(const json& body, const char* key) {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

json responses_input_messages(const json& input) {
    json messages = json::array();
    if (input.is_string()) {
        messages.push_back({{"role", "user"}, {"content", input}});
        return messages;
    }
    if (!input.is_array()) throw bad_request("'input' must be a string or an array of items", "input");
    for (size_t i = 0; i < input.size(); ++i) {
        const json& item = input[i];
        const std::string where = where_of(i);
        if (!item.is_object()) throw bad_request(where + " must be an object", "input");
        const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>()
                                                                                  : std::string("message");
        if (type == "message") {
            const std::string& role = required_string(item, "role", where);
            if (role != "user" && role != "assistant" && role != "system" && role != "developer")
                throw bad_request(where + ": unknown role '" + role + "'", "input");
            if (!item.contains("content")) throw bad_request(where + " needs 'content'", "input");
            messages.push_back({{"role", role == "developer" ? "system" : role}, {"content", message_content(item["content"], where)}});
        } else if (type == "function_call") {
            const json call = {{"id", required_string(item, "call_id", where)},
                               {"type", "function"},
                               {"function", {{"name", required_string(item, "name", where)},
                                             {"arguments", required_string(item, "arguments", where)}}}};
            // Calls made in one turn belong to one assistant message.
            if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls"))
                messages.back()["tool_calls"].push_back(call);
            else
                messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array({call})}});
        } else if (type == "function_call_output") {
            const std::string& call_id = required_string(item, "call_id", where);
            if (!item.contains("output")) throw bad_request(where + " needs 'output'", "input");
            const json& output = item["output"];
            messages.push_back({{"role", "tool"},
                                {"tool_call_id", call_id},
                                {"content", output.is_string() ? output : json(message_content(output, where))}});
        } else if (type == "reasoning") {
            // The model's earlier reasoning: templates drop it between turns anyway.
        } else {
            throw bad_request(where + ": items of type '" + type + "' are not supported", "input");
        }
    }
    return messages;
}

ResponsesJob parse_openai_responses(const json& body, const ConversationLookup& lookup,
                                    const sampling::SamplingParams& defaults) {
    ResponsesJob job;
    json chat = body;
    for (const char* key : kResponsesOnlyFields) chat.erase(key);
    if (body.contains("n")) throw bad_request("'n' is not a Responses API field", "n");
    // Background responses are polled later by id; nothing here can serve that.
    if (const json* bg = present(body, "background"); bg && *bg != json(false))
        throw bad_request("'background' responses are not supported", "background");

    const json* input = present(body, "input");
    if (!input) throw bad_request("'input' is required", "input");
    json history = json::array();
    if (const json* prev = present(body, "previous_response_id")) {
        if (!prev->is_string()) throw bad_request("'previous_response_id' must be a string", "previous_response_id");
        job.previous_response_id = prev->get<std::string>();
        auto found = lookup(job.previous_response_id);
        if (!found)
            throw ApiError(404, "invalid_request_error",
                           "Previous response with id '" + job.previous_response_id + "' not found.", "previous_response_id");
        history = std::move(*found);
    }
    job.conversation = history;
    for (auto& m : responses_input_messages(*input)) job.conversation.push_back(std::move(m));

    std::string instructions;
    if (const json* ins = present(body, "instructions")) {
        if (!ins->is_string()) throw bad_request("'instructions' must be a string", "instructions");
        instructions = ins->get<std::string>();
    }
    // Instructions apply to this response only (a follow-up gives its own), so
    // they lead the prompt but are not part of the kept conversation.
    json messages = json::array();
    if (!instructions.empty()) messages.push_back({{"role", "system"}, {"content", instructions}});
    for (const auto& m : job.conversation) messages.push_back(m);
    chat["messages"] = messages;

    if (const json* tools = present(body, "tools")) chat["tools"] = chat_tools(*tools);
    if (const json* tc = present(body, "tool_choice")) chat["tool_choice"] = chat_tool_choice(*tc);
    if (const json* mot = present(body, "max_output_tokens")) chat["max_tokens"] = *mot;
    if (const json* text = present(body, "text")) {
        json rf = chat_response_format(*text);
        if (!rf.is_null()) chat["response_format"] = rf;
    }
    if (const json* store = present(body, "store")) {
        if (!store->is_boolean()) throw bad_request("'store' must be a boolean", "store");
        job.store = store->get<bool>();
    }
    try {
        job.chat = parse_openai_chat(chat, defaults);
    } catch (const ApiError& e) {
        // The chat parser names chat fields; the client sent Responses ones.
        const std::string param = e.param() == "messages" ? "input" : e.param() == "max_tokens" ? "max_output_tokens" : e.param();
        throw ApiError(e.status(), e.type(), e.what(), param);
    }

    job.echo = {{"instructions", instructions.empty() ? json() : json(instructions)},
                {"max_output_tokens", body.value("max_output_tokens", json())},
                {"parallel_tool_calls", job.chat.parallel_tool_calls},
                {"previous_response_id", job.previous_response_id.empty() ? json() : json(job.previous_response_id)},
                {"store", job.store},
                {"temperature", job.chat.gen.sampling.temp},
                {"text", body.contains("text") && body["text"].is_object() ? body["text"] : json{{"format", {{"type", "text"}}}}},
                {"tool_choice", body.value("tool_choice", json("auto"))},
                {"tools", body.contains("tools") && body["tools"].is_array() ? body["tools"] : json::array()},
                {"top_p", job.chat.gen.sampling.top_p},
                {"metadata", body.contains("metadata") && body["metadata"].is_object() ? body["metadata"] : json::object()}};
    return job;
}

}  // namespace cria::server
