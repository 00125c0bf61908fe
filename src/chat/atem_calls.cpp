#include "atem_calls.h"

#include <nlohmann/json.hpp>

namespace cria::chat {
namespace {

using Json = nlohmann::ordered_json;

const std::string kCallsOpen = "<atem:function_calls>";
const std::string kCallsClose = "</atem:function_calls>";
const std::string kInvokeOpen = "<atem:invoke name=\"";
const std::string kInvokeClose = "</atem:invoke>";
const std::string kParamOpen = "<atem:parameter name=\"";
const std::string kParamClose = "</atem:parameter>";

size_t skip_blank(const std::string& s, size_t p) {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r' || s[p] == '\n')) ++p;
    return p;
}

// `open` + NAME + `">` at p: returns NAME and moves p past the tag.
std::optional<std::string> named_tag(const std::string& s, size_t& p, const std::string& open) {
    if (s.compare(p, open.size(), open) != 0) return std::nullopt;
    const size_t name_begin = p + open.size();
    const size_t quote = s.find("\">", name_begin);
    if (quote == std::string::npos) return std::nullopt;
    std::string name = s.substr(name_begin, quote - name_begin);
    if (name.empty() || name.find_first_of("\"<>\n") != std::string::npos) return std::nullopt;
    p = quote + 2;
    return name;
}

Json parameter_value(const std::string& raw) {
    Json j = Json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded() && !j.is_string()) return j;
    return raw;  // written as is, spaces kept
}

}  // namespace

std::optional<std::vector<ToolCall>> parse_atem_calls(const std::string& body) {
    size_t p = skip_blank(body, 0);
    if (body.compare(p, kCallsOpen.size(), kCallsOpen) != 0) return std::nullopt;
    p += kCallsOpen.size();
    std::vector<ToolCall> calls;
    while (true) {
        p = skip_blank(body, p);
        const auto name = named_tag(body, p, kInvokeOpen);
        if (!name) break;
        Json args = Json::object();
        while (true) {
            p = skip_blank(body, p);
            const auto key = named_tag(body, p, kParamOpen);
            if (!key) break;
            const size_t end = body.find(kParamClose, p);
            if (end == std::string::npos) return std::nullopt;
            args[*key] = parameter_value(body.substr(p, end - p));
            p = end + kParamClose.size();
        }
        if (body.compare(p, kInvokeClose.size(), kInvokeClose) != 0) return std::nullopt;
        p += kInvokeClose.size();
        calls.push_back(ToolCall{"", *name, args.dump()});
    }
    if (calls.empty()) return std::nullopt;
    // The closing tag may be cut off (the output ended); anything else after the calls is not ATEM.
    if (body.compare(p, kCallsClose.size(), kCallsClose) == 0) p += kCallsClose.size();
    if (skip_blank(body, p) != body.size()) return std::nullopt;
    return calls;
}

}  // namespace cria::chat
