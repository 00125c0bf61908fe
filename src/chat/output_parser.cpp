// Output parsing: one streaming state machine; parse_output() is that machine
// fed the whole text, so streaming and one-shot parsing cannot disagree.

#include "cria/chat/output_parser.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "atem_calls.h"
#include "kimi_k3_calls.h"
#include "cria/core/error.h"

namespace cria::chat {

namespace {

using Json = nlohmann::ordered_json;

struct ReasoningPair {
    const char* open;
    const char* close;
};
const ReasoningPair kReasoning[] = {{"<think>", "</think>"}, {"<seed:think>", "</seed:think>"}, {"<thinking>", "</thinking>"}, {"[THINK]", "[/THINK]"}};

const std::string kHermesOpen = "<tool_call>";
const std::string kHermesClose = "</tool_call>";
const std::string kMistralCalls = "[TOOL_CALLS]";
const std::string kMistralArgs = "[ARGS]";
const std::string kPythonTag = "<|python_tag|>";
const std::string kDsCallsBegin = "<｜tool▁calls▁begin｜>";
const std::string kDsCallsEnd = "<｜tool▁calls▁end｜>";
const std::string kDsCallBegin = "<｜tool▁call▁begin｜>";
const std::string kDsCallEnd = "<｜tool▁call▁end｜>";
const std::string kDsSep = "<｜tool▁sep｜>";
const std::string kHarmonyChannel = "<|channel|>";
const std::string kHarmonyStart = "<|start|>";
const std::string kHarmonyMessage = "<|message|>";
const std::string kHarmonyEnd = "<|end|>";
const std::string kHarmonyReturn = "<|return|>";
const std::string kHarmonyCall = "<|call|>";
// Muse Glimmer: messages are "<|start|>assistant to=RECIPIENT<|message|>BODY"
// ended by <|eom|> (more follows) or <|eot|> (end of turn).
const std::string kMuseStart = "<|start|>";
const std::string kMuseMessage = "<|message|>";
const std::string kMuseEom = "<|eom|>";
const std::string kMuseEot = "<|eot|>";
const std::string kMuseAssistant = "assistant";
// Kimi-K3: an assistant message is <|open|>think<|sep|>…<|close|>think<|sep|>
// <|open|>response<|sep|>…<|close|>response<|sep|> and an optional
// <|open|>tools<|sep|>…<|close|>tools<|sep|>, closed by
// <|close|>message<|sep|><|end_of_msg|>. The tags around the response and the
// message are structure, never text.
const std::string kK3ThinkOpen = "<|open|>think<|sep|>";
const std::string kK3ThinkClose = "<|close|>think<|sep|>";
const std::string kK3ResponseOpen = "<|open|>response<|sep|>";
const std::string kK3ResponseClose = "<|close|>response<|sep|>";
const std::string kK3ToolsOpen = "<|open|>tools<|sep|>";
const std::string kK3ToolsClose = "<|close|>tools<|sep|>";
const std::string kK3MessageClose = "<|close|>message<|sep|>";
const std::string kK3EndOfMsg = "<|end_of_msg|>";

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

std::optional<Json> parse_json(const std::string& text) {
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

// Arguments as compact JSON text; a string argument is taken as already-JSON text.
std::optional<std::string> arguments_text(const Json& args) {
    if (args.is_string()) return args.get<std::string>();
    if (args.is_object() || args.is_array()) return args.dump();
    if (args.is_null()) return std::string("{}");
    return std::nullopt;
}

// {"name": ..., "arguments" | "parameters": ...[, "id": ...]}
std::optional<ToolCall> call_from_object(const Json& j) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
    ToolCall call;
    call.name = j["name"].get<std::string>();
    const Json args = j.contains("arguments") ? j["arguments"] : j.contains("parameters") ? j["parameters"] : Json::object();
    auto text = arguments_text(args);
    if (!text) return std::nullopt;
    call.arguments = *text;
    if (j.contains("id") && j["id"].is_string()) call.id = j["id"].get<std::string>();
    return call;
}

std::optional<std::vector<ToolCall>> parse_object_or_array(const std::string& body) {
    auto j = parse_json(trim(body));
    if (!j) return std::nullopt;
    std::vector<ToolCall> calls;
    if (j->is_array()) {
        for (const auto& e : *j) {
            auto c = call_from_object(e);
            if (!c) return std::nullopt;
            calls.push_back(*c);
        }
        return calls;
    }
    auto c = call_from_object(*j);
    if (!c) return std::nullopt;
    calls.push_back(*c);
    return calls;
}

std::optional<std::string> compact_json(const std::string& text) {
    auto j = parse_json(trim(text));
    if (!j) return std::nullopt;
    return j->dump();
}

// [TOOL_CALLS][{...}] (v1-v3 tokenizers) or [TOOL_CALLS]name[ARGS]{...} (v11+), repeated.
std::optional<std::vector<ToolCall>> parse_mistral(const std::string& body) {
    const std::string t = trim(body);
    if (!t.empty() && t[0] == '[') return parse_object_or_array(t);
    std::vector<ToolCall> calls;
    size_t pos = 0;
    while (pos <= t.size()) {
        size_t next = t.find(kMistralCalls, pos);
        const std::string piece = t.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        const size_t args = piece.find(kMistralArgs);
        if (args == std::string::npos) return std::nullopt;
        ToolCall call;
        call.name = trim(piece.substr(0, args));
        auto a = compact_json(piece.substr(args + kMistralArgs.size()));
        if (call.name.empty() || !a) return std::nullopt;
        call.arguments = *a;
        calls.push_back(call);
        if (next == std::string::npos) break;
        pos = next + kMistralCalls.size();
    }
    return calls;
}

// R1: <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
// V3.1+: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
std::optional<std::vector<ToolCall>> parse_deepseek(const std::string& body) {
    std::vector<ToolCall> calls;
    size_t pos = 0;
    while (true) {
        const size_t b = body.find(kDsCallBegin, pos);
        if (b == std::string::npos) break;
        const size_t e = body.find(kDsCallEnd, b);
        const std::string seg = body.substr(b + kDsCallBegin.size(), e == std::string::npos ? std::string::npos : e - b - kDsCallBegin.size());
        const size_t sep = seg.find(kDsSep);
        if (sep == std::string::npos) return std::nullopt;
        const std::string left = trim(seg.substr(0, sep));
        std::string right = seg.substr(sep + kDsSep.size());
        ToolCall call;
        if (left == "function") {
            const size_t nl = right.find('\n');
            call.name = trim(right.substr(0, nl));
            std::string rest = nl == std::string::npos ? "" : right.substr(nl + 1);
            const size_t fence = rest.find("```");
            if (fence != std::string::npos) {
                size_t start = rest.find('\n', fence);
                start = start == std::string::npos ? fence + 3 : start + 1;
                const size_t close = rest.find("```", start);
                rest = rest.substr(start, close == std::string::npos ? std::string::npos : close - start);
            }
            right = rest;
        } else {
            call.name = left;
        }
        auto a = compact_json(right);
        if (call.name.empty() || !a) return std::nullopt;
        call.arguments = *a;
        calls.push_back(call);
        if (e == std::string::npos) break;
        pos = e + kDsCallEnd.size();
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

// The longest suffix of `s` that is a proper prefix of one of `markers`.
size_t held_back_length(const std::string& s, const std::vector<std::string>& markers) {
    size_t best = 0;
    for (const auto& m : markers) {
        for (size_t len = std::min(s.size(), m.size() - 1); len > best; --len) {
            if (s.compare(s.size() - len, len, m, 0, len) == 0) {
                best = len;
                break;
            }
        }
    }
    return best;
}

}  // namespace

OutputFormat output_format_from_name(const std::string& name) {
    if (name == "generic") return OutputFormat::Generic;
    if (name == "hermes" || name == "qwen") return OutputFormat::Hermes;
    if (name == "llama3") return OutputFormat::Llama3;
    if (name == "mistral") return OutputFormat::Mistral;
    if (name == "deepseek") return OutputFormat::DeepSeek;
    if (name == "harmony" || name == "gpt-oss") return OutputFormat::Harmony;
    if (name == "muse-glimmer") return OutputFormat::MuseGlimmer;
    if (name == "kimi-k3") return OutputFormat::KimiK3;
    throw cria::Error("unknown output format '" + name +
                      "' (generic, hermes, llama3, mistral, deepseek, harmony, muse-glimmer, kimi-k3)");
}

OutputFormat detect_output_format(const std::string& src) {
    // As llama.cpp selects it: the ATEM call markup and the end-of-message token.
    if (src.find("<atem:function_calls>") != std::string::npos && src.find(kMuseEom) != std::string::npos)
        return OutputFormat::MuseGlimmer;
    // Kimi-K3's tag syntax (its macros open_tag and close_tag).
    if (src.find("<|open|>") != std::string::npos && src.find("<|close|>") != std::string::npos &&
        src.find("<|sep|>") != std::string::npos)
        return OutputFormat::KimiK3;
    if (src.find("<|channel|>") != std::string::npos) return OutputFormat::Harmony;
    if (src.find(kDsCallsBegin) != std::string::npos) return OutputFormat::DeepSeek;
    if (src.find(kMistralCalls) != std::string::npos) return OutputFormat::Mistral;
    if (src.find(kHermesOpen) != std::string::npos) return OutputFormat::Hermes;
    if (src.find(kPythonTag) != std::string::npos || src.find("<|start_header_id|>ipython") != std::string::npos)
        return OutputFormat::Llama3;
    return OutputFormat::Generic;
}

bool prompt_opens_reasoning(const std::string& prompt) {
    const std::string t = trim(prompt);
    if (t.size() >= kK3ThinkOpen.size() && t.compare(t.size() - kK3ThinkOpen.size(), kK3ThinkOpen.size(), kK3ThinkOpen) == 0)
        return true;
    for (const auto& r : kReasoning) {
        const std::string open = r.open;
        if (t.size() >= open.size() && t.compare(t.size() - open.size(), open.size(), open) == 0) return true;
    }
    return false;
}

StreamingOutputParser::StreamingOutputParser(OutputParserOptions options) : opt_(options) {
    if (opt_.format == OutputFormat::MuseGlimmer) {
        // The generation prompt ends in "<|start|>assistant": the model
        // writes the rest of the header (" to=self<|message|>") itself, and
        // none of it is content.
        mode_ = Mode::Header;
        return;
    }
    if (opt_.reasoning_starts_open) {
        mode_ = Mode::Reasoning;
        reasoning_end_ = opt_.format == OutputFormat::Mistral ? "[/THINK]"
                         : opt_.format == OutputFormat::KimiK3 ? kK3ThinkClose
                                                               : "</think>";
    }
}

std::vector<std::string> StreamingOutputParser::markers_for_mode() const {
    const bool harmony = opt_.format == OutputFormat::Harmony;
    if (opt_.format == OutputFormat::MuseGlimmer) {
        // <|eom|> and <|eot|> may be control tokens the detokenizer does not
        // show: <|start|> alone also opens the next message.
        if (mode_ == Mode::Header) return {kMuseMessage, kMuseStart};
        return {kMuseStart, kMuseEom, kMuseEot};
    }
    switch (mode_) {
        case Mode::Content: {
            if (harmony) return {kHarmonyChannel, kHarmonyStart, kHarmonyEnd, kHarmonyReturn, kHarmonyCall};
            std::vector<std::string> m;
            for (const auto& r : kReasoning) m.emplace_back(r.open);
            if (opt_.format == OutputFormat::Hermes) m.push_back(kHermesOpen);
            if (opt_.format == OutputFormat::Mistral) m.push_back(kMistralCalls);
            if (opt_.format == OutputFormat::DeepSeek) m.push_back(kDsCallsBegin);
            if (opt_.format == OutputFormat::Llama3) m.push_back(kPythonTag);
            if (opt_.format == OutputFormat::KimiK3)
                m.insert(m.end(), {kK3ThinkOpen, kK3ResponseOpen, kK3ResponseClose, kK3ToolsOpen, kK3MessageClose, kK3EndOfMsg});
            return m;
        }
        case Mode::Reasoning:
            if (harmony) return {kHarmonyEnd, kHarmonyReturn, kHarmonyStart, kHarmonyChannel};
            return {reasoning_end_};
        case Mode::Collect:
            if (harmony) return {kHarmonyCall, kHarmonyEnd, kHarmonyReturn};
            if (opt_.format == OutputFormat::Hermes) return {kHermesClose};
            if (opt_.format == OutputFormat::DeepSeek) return {kDsCallsEnd};
            if (opt_.format == OutputFormat::KimiK3) return {kK3ToolsClose};
            return {};  // Mistral and <|python_tag|>: the calls run to the end of the output
        case Mode::Header: return {kHarmonyMessage};
        case Mode::JsonCandidate: return {};
    }
    return {};
}

void StreamingOutputParser::emit(OutputDelta& out, const std::string& text) {
    if (text.empty()) return;
    switch (mode_) {
        case Mode::Reasoning: out.reasoning += text; break;
        case Mode::Content:
            out.content += text;
            content_started_ = content_started_ || !is_blank(text);
            break;
        default: collected_ += text; break;
    }
}

void StreamingOutputParser::end_collect(OutputDelta& out, bool terminated) {
    std::optional<std::vector<ToolCall>> calls;
    switch (opt_.format) {
        case OutputFormat::Hermes: calls = parse_object_or_array(collected_); break;
        case OutputFormat::Llama3: calls = parse_object_or_array(collected_); break;
        case OutputFormat::Mistral: calls = parse_mistral(collected_); break;
        case OutputFormat::DeepSeek: calls = parse_deepseek(collected_); break;
        case OutputFormat::Harmony: {
            auto a = compact_json(collected_);
            if (a) calls = std::vector<ToolCall>{ToolCall{"", recipient_, *a}};
            break;
        }
        case OutputFormat::MuseGlimmer: calls = parse_atem_calls(collected_); break;
        case OutputFormat::KimiK3: calls = parse_kimi_k3_calls(collected_); break;
        case OutputFormat::Generic: break;
    }
    const std::string raw = collect_marker_ + collected_;
    collected_.clear();
    collect_marker_.clear();
    mode_ = Mode::Content;
    if (calls) {
        out.tool_calls.insert(out.tool_calls.end(), calls->begin(), calls->end());
    } else {
        // Not a tool call after all: keep the text, so nothing the model wrote is lost.
        std::string close;
        if (terminated && opt_.format == OutputFormat::Hermes) close = kHermesClose;
        if (terminated && opt_.format == OutputFormat::KimiK3) close = kK3ToolsClose;
        emit(out, raw + close);
    }
}

void StreamingOutputParser::on_muse_glimmer_marker(const std::string& marker, OutputDelta& out) {
    if (mode_ == Mode::Header) {
        if (marker == kMuseStart) {  // the output repeated the prompt's "<|start|>": still a header
            collected_.clear();
            return;
        }
        // "assistant to=RECIPIENT" or " to=RECIPIENT" (the prompt had "<|start|>assistant").
        std::string header = trim(collected_);
        collected_.clear();
        if (header.rfind(kMuseAssistant, 0) == 0) header = trim(header.substr(kMuseAssistant.size()));
        std::string recipient;
        if (header.rfind("to=", 0) == 0) {
            for (size_t p = 3; p < header.size() && header[p] != ' ' && header[p] != '<'; ++p) recipient += header[p];
        }
        if (recipient == "self") {
            mode_ = Mode::Reasoning;
        } else if (recipient.empty() || recipient == "user") {
            mode_ = Mode::Content;
        } else {
            recipient_ = recipient;
            mode_ = Mode::Collect;
            collect_marker_.clear();
        }
        return;
    }
    // The end of a message body (reasoning, answer or tool call), or the start of the next message.
    if (mode_ == Mode::Collect) end_collect(out, true);
    mode_ = marker == kMuseStart ? Mode::Header : Mode::Content;
    collected_.clear();
}

void StreamingOutputParser::on_marker(const std::string& marker, OutputDelta& out) {
    if (opt_.format == OutputFormat::MuseGlimmer) {
        on_muse_glimmer_marker(marker, out);
        return;
    }
    const bool harmony = opt_.format == OutputFormat::Harmony;
    switch (mode_) {
        case Mode::Content:
            if (harmony) {
                if (marker == kHarmonyChannel || marker == kHarmonyStart) {
                    mode_ = Mode::Header;
                    collected_ = marker;
                }
                return;  // <|end|>, <|return|>, <|call|> between messages are dropped
            }
            if (opt_.format == OutputFormat::KimiK3) {
                if (marker == kK3ThinkOpen) {
                    mode_ = Mode::Reasoning;
                    reasoning_end_ = kK3ThinkClose;
                    return;
                }
                if (marker == kK3ToolsOpen) {
                    mode_ = Mode::Collect;
                    collect_marker_ = marker;
                    collected_.clear();
                    return;
                }
                if (marker == kK3ResponseOpen || marker == kK3ResponseClose || marker == kK3MessageClose ||
                    marker == kK3EndOfMsg)
                    return;  // structure of the message, not text
            }
            for (const auto& r : kReasoning)
                if (marker == r.open) {
                    mode_ = Mode::Reasoning;
                    reasoning_end_ = r.close;
                    return;
                }
            mode_ = Mode::Collect;
            collect_marker_ = marker;
            collected_.clear();
            return;
        case Mode::Reasoning:
            if (harmony && (marker == kHarmonyStart || marker == kHarmonyChannel)) {
                mode_ = Mode::Header;
                collected_ = marker;
                return;
            }
            mode_ = Mode::Content;
            return;
        case Mode::Collect: end_collect(out, true); return;
        case Mode::Header: {
            // e.g. "<|channel|>commentary to=functions.get_weather <|constrain|>json"
            const std::string header = collected_;
            collected_.clear();
            std::string channel;
            if (const size_t c = header.find(kHarmonyChannel); c != std::string::npos) {
                size_t p = c + kHarmonyChannel.size();
                while (p < header.size() && header[p] != ' ' && header[p] != '<') channel += header[p++];
            }
            std::string recipient;
            if (const size_t t = header.find("to="); t != std::string::npos) {
                size_t p = t + 3;
                while (p < header.size() && header[p] != ' ' && header[p] != '<') recipient += header[p++];
            }
            if (recipient.rfind("functions.", 0) == 0) {
                recipient_ = recipient.substr(10);
                mode_ = Mode::Collect;
                collect_marker_.clear();
            } else if (channel == "analysis") {
                mode_ = Mode::Reasoning;
            } else {
                mode_ = Mode::Content;
            }
            return;
        }
        case Mode::JsonCandidate: return;
    }
}

void StreamingOutputParser::step(OutputDelta& out, bool at_end) {
    while (!buffer_.empty()) {
        if (mode_ == Mode::JsonCandidate) {
            collected_ += buffer_;
            buffer_.clear();
            return;
        }
        if (opt_.format == OutputFormat::Llama3 && mode_ == Mode::Content && !content_started_) {
            // Llama 3 calls tools with a bare JSON object as the whole reply:
            // a reply whose first visible character is '{' is held to the end.
            const size_t first = buffer_.find_first_not_of(" \t\r\n");
            if (first == std::string::npos) {
                if (!at_end) return;
            } else if (buffer_[first] == '{') {
                buffer_.erase(0, first);
                mode_ = Mode::JsonCandidate;
                collect_marker_.clear();
                continue;
            }
        }
        const std::vector<std::string> markers = markers_for_mode();
        size_t best = std::string::npos;
        const std::string* found = nullptr;
        for (const auto& m : markers) {
            const size_t p = buffer_.find(m);
            if (p != std::string::npos && (p < best || (p == best && m.size() > found->size()))) {
                best = p;
                found = &m;
            }
        }
        if (found) {
            const std::string marker = *found;
            emit(out, buffer_.substr(0, best));
            buffer_.erase(0, best + marker.size());
            on_marker(marker, out);
            continue;
        }
        const size_t hold = at_end ? 0 : held_back_length(buffer_, markers);
        emit(out, buffer_.substr(0, buffer_.size() - hold));
        buffer_.erase(0, buffer_.size() - hold);
        return;
    }
}

OutputDelta StreamingOutputParser::push(std::string_view text) {
    OutputDelta out;
    buffer_.append(text);
    step(out, false);
    return out;
}

OutputDelta StreamingOutputParser::finish() {
    OutputDelta out;
    step(out, true);
    if (mode_ == Mode::Collect) {
        end_collect(out, false);
    } else if (mode_ == Mode::JsonCandidate) {
        auto calls = parse_object_or_array(collected_);
        const std::string raw = collected_;
        collected_.clear();
        mode_ = Mode::Content;
        if (calls) out.tool_calls = *calls;
        else emit(out, raw);
    } else if (mode_ == Mode::Header) {
        // An unfinished harmony header carries no text; Muse Glimmer output
        // that never wrote a header ("<|message|>") is all content, unless
        // it is the start of one.
        const std::string rest = collected_;
        collected_.clear();
        mode_ = Mode::Content;
        if (opt_.format == OutputFormat::MuseGlimmer && rest.find("to=") == std::string::npos) emit(out, rest);
    }
    return out;
}

ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options) {
    StreamingOutputParser parser(options);
    ParsedOutput out = parser.push(text);
    ParsedOutput rest = parser.finish();
    out.reasoning += rest.reasoning;
    out.content += rest.content;
    out.tool_calls.insert(out.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
    return out;
}

}  // namespace cria::chat
