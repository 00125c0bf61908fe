// Kimi-K3 tool-call markup: a small recursive reader over the tags
// <|open|>NAME ATTRS<|sep|> ... <|close|>NAME<|sep|>. Argument values are read
// up to their own closing tag, so a value may hold any other tag as text.

#include "kimi_k3_calls.h"

#include <map>
#include <nlohmann/json.hpp>

namespace cria::chat {

namespace {

using Json = nlohmann::ordered_json;

const std::string kOpen = "<|open|>";
const std::string kClose = "<|close|>";
const std::string kSep = "<|sep|>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void skip_space(const std::string& s, size_t& pos) {
    while (pos < s.size() && is_space(s[pos])) ++pos;
}

std::string unescape_attr(const std::string& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (v.compare(i, 6, "&quot;") == 0) {
            out += '"';
            i += 5;
        } else if (v.compare(i, 5, "&amp;") == 0) {
            out += '&';
            i += 4;
        } else {
            out += v[i];
        }
    }
    return out;
}

struct OpenTag {
    std::string name;
    std::map<std::string, std::string> attrs;
};

// Reads "<|open|>NAME k="v" ...<|sep|>" at pos (after optional whitespace).
std::optional<OpenTag> read_open(const std::string& s, size_t& pos) {
    skip_space(s, pos);
    if (s.compare(pos, kOpen.size(), kOpen) != 0) return std::nullopt;
    const size_t sep = s.find(kSep, pos + kOpen.size());
    if (sep == std::string::npos) return std::nullopt;
    const std::string header = s.substr(pos + kOpen.size(), sep - pos - kOpen.size());
    pos = sep + kSep.size();
    OpenTag tag;
    size_t p = 0;
    skip_space(header, p);
    while (p < header.size() && !is_space(header[p])) tag.name += header[p++];
    while (true) {
        skip_space(header, p);
        if (p >= header.size()) break;
        const size_t eq = header.find("=\"", p);
        if (eq == std::string::npos) return std::nullopt;
        const std::string key = header.substr(p, eq - p);
        const size_t end = header.find('"', eq + 2);
        if (key.empty() || end == std::string::npos) return std::nullopt;
        tag.attrs[key] = unescape_attr(header.substr(eq + 2, end - eq - 2));
        p = end + 1;
    }
    if (tag.name.empty()) return std::nullopt;
    return tag;
}

// Reads "<|close|>NAME<|sep|>" at pos (after optional whitespace).
bool read_close(const std::string& s, size_t& pos, const std::string& name) {
    skip_space(s, pos);
    const std::string tag = kClose + name + kSep;
    if (s.compare(pos, tag.size(), tag) != 0) return false;
    pos += tag.size();
    return true;
}

// The raw text up to "<|close|>NAME<|sep|>" (which is consumed).
std::optional<std::string> read_body(const std::string& s, size_t& pos, const std::string& name) {
    const std::string tag = kClose + name + kSep;
    const size_t end = s.find(tag, pos);
    if (end == std::string::npos) return std::nullopt;
    std::string body = s.substr(pos, end - pos);
    pos = end + tag.size();
    return body;
}

std::optional<Json> parse_json(const std::string& text) {
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

// One argument's value from its declared type.
std::optional<Json> typed_value(const std::string& type, const std::string& raw) {
    if (type == "string") return Json(raw);
    auto j = parse_json(raw);
    if (!j) return std::nullopt;
    const bool fits = (type == "number" && j->is_number()) || (type == "boolean" && j->is_boolean()) ||
                      (type == "null" && j->is_null()) || (type == "object" && j->is_object()) ||
                      (type == "array" && j->is_array());
    if (!fits) return std::nullopt;
    return j;
}

std::optional<ToolCall> read_call(const std::string& s, size_t& pos) {
    auto call_tag = read_open(s, pos);
    if (!call_tag || call_tag->name != "call") return std::nullopt;
    const auto tool = call_tag->attrs.find("tool");
    if (tool == call_tag->attrs.end() || tool->second.empty()) return std::nullopt;
    ToolCall call;
    call.name = tool->second;
    if (const auto index = call_tag->attrs.find("index"); index != call_tag->attrs.end())
        call.id = "functions." + call.name + ":" + index->second;
    Json args = Json::object();
    bool raw_json = false;
    while (!read_close(s, pos, "call")) {
        auto tag = read_open(s, pos);
        if (!tag) return std::nullopt;
        auto body = read_body(s, pos, tag->name);
        if (!body) return std::nullopt;
        if (tag->name == "argument") {
            const auto key = tag->attrs.find("key");
            const auto type = tag->attrs.find("type");
            if (raw_json || key == tag->attrs.end() || type == tag->attrs.end()) return std::nullopt;
            auto value = typed_value(type->second, *body);
            if (!value) return std::nullopt;
            args[key->second] = *value;
        } else if (tag->name == "json") {
            // The whole arguments object as JSON text (arguments the client gave as a string).
            auto j = parse_json(*body);
            if (!j || !j->is_object() || raw_json || !args.empty()) return std::nullopt;
            args = *j;
            raw_json = true;
        } else {
            return std::nullopt;
        }
    }
    call.arguments = args.dump();
    return call;
}

}  // namespace

std::optional<std::vector<ToolCall>> parse_kimi_k3_calls(const std::string& body) {
    std::vector<ToolCall> calls;
    size_t pos = 0;
    while (true) {
        skip_space(body, pos);
        if (pos >= body.size()) break;
        auto call = read_call(body, pos);
        if (!call) return std::nullopt;
        calls.push_back(*call);
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

}  // namespace cria::chat
