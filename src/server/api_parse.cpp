// Validation and conversion of OpenAI chat/completions and Anthropic Messages
// request bodies. Every wrong type is a 400 naming the field; nothing here
// trusts the client.
#include <cmath>
#include <limits>

#include "api.h"
#include "data_url.h"
#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "cria/grammar/json_schema.h"
#include "cria/media/media_prompt.h"
#include "cria/spec/params.h"

namespace cria::server {

ApiError bad_request(const std::string& message, const std::string& param) {
    return ApiError(400, "invalid_request_error", message, param);
}

std::string openai_error_type(int status) {
    switch (status) {
        case 400: case 404: case 413: case 422: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 429: return "rate_limit_error";
        case 501: return "not_supported_error";
        case 503: return "unavailable_error";
        default: return "server_error";
    }
}

std::string anthropic_error_type(int status) {
    switch (status) {
        case 400: case 422: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 503: case 529: return "overloaded_error";
        default: return "api_error";
    }
}

std::string error_body(Dialect dialect, int status, const std::string& type, const std::string& message,
                       const std::string& param) {
    json j;
    if (dialect == Dialect::Anthropic) {
        j["type"] = "error";
        j["error"] = {{"type", anthropic_error_type(status)}, {"message", message}};
    } else {
        j["error"] = {{"message", message},
                      {"type", type.empty() ? openai_error_type(status) : type},
                      {"param", param.empty() ? json() : json(param)},
                      {"code", status == 404 && type == "model_not_found" ? json("model_not_found") : json(status)}};
    }
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_json_bounded(const std::string& text) {
    // nlohmann's parser itself is iterative; the callback sees each value's depth as it starts.
    const json::parser_callback_t limit = [](int depth, json::parse_event_t event, json&) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
            depth >= kMaxRequestJsonDepth)
            throw Error("JSON nested deeper than " + std::to_string(kMaxRequestJsonDepth) + " levels");
        return true;
    };
    return json::parse(text, limit);
}

json parse_body(const std::string& body) {
    json j;
    try {
        j = parse_json_bounded(body);
    } catch (const json::exception& e) {
        throw bad_request(std::string("the request body is not valid JSON: ") + e.what());
    } catch (const Error& e) {
        throw bad_request(std::string("the request body is refused: ") + e.what());
    }
    if (!j.is_object()) throw bad_request("the request body must be a JSON object");
    return j;
}

namespace {

const json* field(const json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

double number_field(const json& body, const char* key, double lo, double hi) {
    const json* v = field(body, key);
    if (!v->is_number()) throw bad_request(std::string("'") + key + "' must be a number", key);
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
        throw bad_request(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi), key);
    return d;
}

int64_t integer_field(const json& body, const char* key, int64_t lo, int64_t hi) {
    const json* v = field(body, key);
    if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
        throw bad_request(std::string("'") + key + "' must be an integer", key);
    const double d = v->get<double>();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
        throw bad_request(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi), key);
    return static_cast<int64_t>(d);
}

bool bool_field(const json& body, const char* key) {
    const json* v = field(body, key);
    if (!v->is_boolean()) throw bad_request(std::string("'") + key + "' must be a boolean", key);
    return v->get<bool>();
}

std::string string_field(const json& body, const char* key) {
    const json* v = field(body, key);
    if (!v->is_string()) throw bad_request(std::string("'") + key + "' must be a string", key);
    return v->get<std::string>();
}

std::vector<std::string> stop_list(const json& body, const char* key, size_t max_count) {
    const json* v = field(body, key);
    std::vector<std::string> out;
    if (!v) return out;
    if (v->is_string()) {
        out.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        for (const auto& s : *v) {
            if (!s.is_string()) throw bad_request(std::string("'") + key + "' must hold strings", key);
            out.push_back(s.get<std::string>());
        }
    } else {
        throw bad_request(std::string("'") + key + "' must be a string or an array of strings", key);
    }
    if (out.size() > max_count) throw bad_request(std::string("'") + key + "' holds too many strings", key);
    for (const auto& s : out)
        if (s.empty() || s.size() > 1024) throw bad_request(std::string("'") + key + "' strings must be 1..1024 bytes", key);
    return out;
}

// An image part's bytes join `images`, and the media marker its text.
void add_image(std::vector<std::vector<uint8_t>>* images, std::vector<uint8_t> bytes, std::string& text,
               const std::string& where) {
    if (images->size() >= kMaxImagesPerRequest)
        throw bad_request(where + ": more than " + std::to_string(kMaxImagesPerRequest) + " images in one request");
    images->push_back(std::move(bytes));
    text += media::kDefaultMediaMarker;
}

// Message content: a string, or an array of parts: text (joined, as the
// templates expect a string) and, where `images` is given, image_url parts
// (their bytes go there, a media marker into the text).
std::string text_content(const json& content, const char* where, std::vector<std::vector<uint8_t>>* images = nullptr) {
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw bad_request(std::string(where) + ": content must be a string or an array of parts");
    std::string text;
    for (const auto& part : content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            throw bad_request(std::string(where) + ": every content part needs a 'type'");
        const std::string type = part["type"].get<std::string>();
        if (type == "image_url" && images != nullptr) {
            const json* url = part.contains("image_url") ? &part["image_url"] : nullptr;
            if (url && url->is_object() && url->contains("url")) url = &(*url)["url"];
            if (!url || !url->is_string())
                throw bad_request(std::string(where) + ": an image_url part needs 'image_url': {'url': ...}");
            add_image(images, image_from_data_url(url->get<std::string>()), text, where);
            continue;
        }
        if (type != "text") throw bad_request(std::string(where) + ": content parts of type '" + type + "' are not supported");
        if (!part.contains("text") || !part["text"].is_string())
            throw bad_request(std::string(where) + ": a text part needs a string 'text'");
        text += part["text"].get<std::string>();
    }
    return text;
}

json validate_tools(const json& tools) {
    if (!tools.is_array()) throw bad_request("'tools' must be an array", "tools");
    for (const auto& t : tools) {
        if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
            throw bad_request("every tool must be {\"type\": \"function\", \"function\": {...}}", "tools");
        const auto& f = t["function"];
        if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty())
            throw bad_request("every tool function needs a 'name'", "tools");
        if (f.contains("parameters") && !f["parameters"].is_null() && !f["parameters"].is_object())
            throw bad_request("a tool's 'parameters' must be a JSON schema object", "tools");
    }
    return tools;
}

// Speculative decoding settings: llama-server's flat "speculative.n_max",
// "speculative.n_min", "speculative.p_min", or cria's object
// "speculative": {"type", "n_max", "n_min", "p_min"} (not both for one setting),
// or "speculative": false.
void parse_speculative(const json& body, SpeculativeRequest& out) {
    const json* object = field(body, "speculative");
    // `"speculative": false` turns drafting off for this request (allowed on
    // any server); `true` asks for the server's defaults, as no field does.
    if (object && object->is_boolean()) {
        if (!object->get<bool>()) {
            out.given = true;
            out.n_max = 0;
        }
        return;
    }
    if (object && !object->is_object())
        throw bad_request("'speculative' must be false or an object with type, n_max, n_min, p_min", "speculative");
    static const json empty = json::object();
    const json& obj = object ? *object : empty;
    for (auto it = obj.begin(); it != obj.end(); ++it)
        if (it.key() != "type" && it.key() != "n_max" && it.key() != "n_min" && it.key() != "p_min")
            throw bad_request("unknown field 'speculative." + it.key() + "' (known: type, n_max, n_min, p_min)", "speculative");
    // The value of one setting, from whichever spelling the request used.
    auto pick = [&](const char* name, auto read) {
        const std::string flat = std::string("speculative.") + name;
        const bool in_flat = field(body, flat.c_str()) != nullptr, in_object = field(obj, name) != nullptr;
        if (in_flat && in_object) throw bad_request("give '" + flat + "' once, flat or inside 'speculative'", flat);
        if (in_flat || in_object) {
            out.given = true;
            try {
                read(in_flat ? body : obj, in_flat ? flat.c_str() : name);
            } catch (const ApiError& e) {
                throw bad_request(std::string(e.what()), flat);
            }
        }
    };
    pick("n_max", [&](const json& j, const char* k) { out.n_max = static_cast<int32_t>(integer_field(j, k, 0, 256)); });
    pick("n_min", [&](const json& j, const char* k) { out.n_min = static_cast<int32_t>(integer_field(j, k, 0, 256)); });
    pick("p_min", [&](const json& j, const char* k) { out.p_min = static_cast<float>(number_field(j, k, 0, 1)); });
    if (field(obj, "type")) {
        out.given = true;
        out.type = string_field(obj, "type");
        if (out.type != "none") {
            try {
                out.type = std::string(spec::spec_type_name(spec::parse_spec_type(out.type)));
            } catch (const Error& e) {
                throw bad_request(std::string("'speculative.type': ") + e.what(), "speculative.type");
            }
        }
    }
    if (out.n_max > 0 && out.n_min > out.n_max)
        throw bad_request("'speculative.n_min' must not exceed 'speculative.n_max'", "speculative.n_min");
}

}  // namespace

namespace {

// logit_bias as llama-server reads it: {"ID": bias, ...} or [[ID, bias], ...];
// a bias of false bans the token (-inf).
void parse_logit_bias(const json& lb, std::vector<sampling::LogitBias>& out) {
    auto add = [&](const std::string& key, const json& value) {
        char* end = nullptr;
        const long id = std::strtol(key.c_str(), &end, 10);
        if (key.empty() || *end != '\0' || id < 0 || id > (1 << 24))
            throw bad_request("'logit_bias' keys must be token ids", "logit_bias");
        float bias = 0;
        if (value.is_boolean() && !value.get<bool>()) bias = -std::numeric_limits<float>::infinity();
        else if (value.is_number()) bias = value.get<float>();
        else throw bad_request("'logit_bias' values must be numbers or false", "logit_bias");
        out.push_back({static_cast<vocab::TokenId>(id), bias});
    };
    if (lb.is_object()) {
        for (const auto& [key, value] : lb.items()) add(key, value);
    } else if (lb.is_array()) {
        for (const auto& pair : lb) {
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer())
                throw bad_request("'logit_bias' as an array holds [token id, bias] pairs", "logit_bias");
            add(std::to_string(pair[0].get<int64_t>()), pair[1]);
        }
    } else {
        throw bad_request("'logit_bias' must be an object of token id -> bias or an array of [id, bias]", "logit_bias");
    }
}

}  // namespace

void parse_openai_sampling(const json& body, GenerationRequest& gen, bool chat, const sampling::SamplingParams& defaults,
                           int32_t* n_choices) {
    auto& s = gen.sampling;
    s = defaults;  // llama-server: what a request leaves out is the server's setting
    if (field(body, "temperature")) s.temp = static_cast<float>(number_field(body, "temperature", 0, 2));
    if (field(body, "top_p")) s.top_p = static_cast<float>(number_field(body, "top_p", 0, 1));
    if (field(body, "top_k")) s.top_k = static_cast<int32_t>(integer_field(body, "top_k", 0, 1 << 20));
    if (field(body, "min_p")) s.min_p = static_cast<float>(number_field(body, "min_p", 0, 1));
    if (field(body, "seed")) s.seed = static_cast<uint32_t>(integer_field(body, "seed", -(int64_t(1) << 62), int64_t(1) << 62) & 0xFFFFFFFF);
    if (field(body, "presence_penalty")) s.penalty_present = static_cast<float>(number_field(body, "presence_penalty", -2, 2));
    if (field(body, "frequency_penalty")) s.penalty_freq = static_cast<float>(number_field(body, "frequency_penalty", -2, 2));
    if (field(body, "repeat_penalty")) s.penalty_repeat = static_cast<float>(number_field(body, "repeat_penalty", 0, 10));
    // llama-server's sampling fields, with the same names and meaning as its flags.
    if (field(body, "repeat_last_n")) s.penalty_last_n = static_cast<int32_t>(integer_field(body, "repeat_last_n", -1, 1 << 24));
    if (field(body, "typical_p")) s.typ_p = static_cast<float>(number_field(body, "typical_p", 0, 1));
    if (field(body, "top_n_sigma")) s.top_n_sigma = static_cast<float>(number_field(body, "top_n_sigma", -1, 1000));
    if (field(body, "xtc_probability")) s.xtc_probability = static_cast<float>(number_field(body, "xtc_probability", 0, 1));
    if (field(body, "xtc_threshold")) s.xtc_threshold = static_cast<float>(number_field(body, "xtc_threshold", 0, 1));
    if (field(body, "dynatemp_range")) s.dynatemp_range = static_cast<float>(number_field(body, "dynatemp_range", 0, 100));
    if (field(body, "dynatemp_exponent")) s.dynatemp_exponent = static_cast<float>(number_field(body, "dynatemp_exponent", 0, 100));
    if (field(body, "mirostat")) s.mirostat = static_cast<int32_t>(integer_field(body, "mirostat", 0, 2));
    if (field(body, "mirostat_tau")) s.mirostat_tau = static_cast<float>(number_field(body, "mirostat_tau", 0, 1000));
    if (field(body, "mirostat_eta")) s.mirostat_eta = static_cast<float>(number_field(body, "mirostat_eta", 0, 1000));
    if (field(body, "dry_multiplier")) s.dry_multiplier = static_cast<float>(number_field(body, "dry_multiplier", 0, 1000));
    if (field(body, "dry_base")) s.dry_base = static_cast<float>(number_field(body, "dry_base", 1, 1000));
    if (field(body, "dry_allowed_length")) s.dry_allowed_length = static_cast<int32_t>(integer_field(body, "dry_allowed_length", 0, 1 << 20));
    if (field(body, "dry_penalty_last_n")) s.dry_penalty_last_n = static_cast<int32_t>(integer_field(body, "dry_penalty_last_n", -1, 1 << 24));
    if (const json* br = field(body, "dry_sequence_breakers")) {
        if (!br->is_array() || br->empty())
            throw bad_request("'dry_sequence_breakers' must be a non-empty array of strings", "dry_sequence_breakers");
        s.dry_sequence_breakers.clear();
        for (const auto& b : *br) {
            if (!b.is_string() || b.get<std::string>().empty() || b.get<std::string>().size() > 64)
                throw bad_request("'dry_sequence_breakers' must hold strings of 1..64 bytes", "dry_sequence_breakers");
            s.dry_sequence_breakers.push_back(b.get<std::string>());
        }
        if (s.dry_sequence_breakers.size() > 64) throw bad_request("'dry_sequence_breakers' holds too many strings", "dry_sequence_breakers");
    }
    if (field(body, "min_keep")) s.min_keep = static_cast<int32_t>(integer_field(body, "min_keep", 0, 1 << 20));
    // llama-server's context shift fields (they matter with --context-shift only).
    if (field(body, "n_keep")) gen.n_keep = static_cast<int32_t>(integer_field(body, "n_keep", -1, 1 << 24));
    if (field(body, "n_discard")) gen.n_discard = static_cast<int32_t>(integer_field(body, "n_discard", 0, 1 << 24));
    if (const json* smp = field(body, "samplers")) {
        try {
            if (smp->is_string()) {
                s.samplers = sampling::samplers_from_chars(smp->get<std::string>());
            } else if (smp->is_array()) {
                std::string names;
                for (const auto& n : *smp) {
                    if (!n.is_string()) throw bad_request("'samplers' must hold sampler names", "samplers");
                    names += n.get<std::string>() + ";";
                }
                s.samplers = sampling::samplers_from_names(names, false);
            } else {
                throw bad_request("'samplers' must be an array of names or a string of letters", "samplers");
            }
        } catch (const Error& e) {
            throw bad_request(std::string("'samplers': ") + e.what(), "samplers");
        }
    }
    if (const json* lb = field(body, "logit_bias")) parse_logit_bias(*lb, s.logit_bias);
    if (field(body, "ignore_eos")) s.ignore_eos = bool_field(body, "ignore_eos");  // llama.cpp extension
    if (field(body, "n")) {
        const auto n = static_cast<int32_t>(integer_field(body, "n", 1, n_choices ? kMaxChoices : 1));
        if (n_choices) *n_choices = n;
    }
    const char* max_key = field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (field(body, max_key)) gen.max_tokens = static_cast<int32_t>(integer_field(body, max_key, 0, 1 << 24));
    parse_speculative(body, gen.speculative);
    if (!chat && field(body, "n_predict")) gen.max_tokens = static_cast<int32_t>(integer_field(body, "n_predict", -1, 1 << 24));
    gen.stop = stop_list(body, "stop", 16);
    // llama.cpp's extensions: a GBNF grammar, or a JSON Schema, for the whole output.
    if (field(body, "grammar") && field(body, "json_schema"))
        throw bad_request("give either 'grammar' or 'json_schema', not both", "grammar");
    try {
        if (field(body, "grammar")) {
            gen.grammar = string_field(body, "grammar");
            grammar::parse_gbnf(gen.grammar);  // a clear 400 now rather than a failed slot later
        } else if (const json* schema = field(body, "json_schema")) {
            if (!schema->is_object()) throw bad_request("'json_schema' must be an object", "json_schema");
            gen.grammar = grammar::json_schema_to_gbnf(nlohmann::json(*schema));
        }
    } catch (const ApiError&) {
        throw;
    } catch (const std::exception& e) {
        throw bad_request(std::string("cannot build a grammar: ") + e.what(), field(body, "grammar") ? "grammar" : "json_schema");
    }
}

namespace {

// One OpenAI message, checked, in the shape templates read (developer is
// system; tool call arguments as objects).
json openai_message(const json& m, size_t i, std::vector<std::vector<uint8_t>>& images) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_request(where + " must be an object", "messages");
    if (!m.contains("role") || !m["role"].is_string()) throw bad_request(where + " needs a string 'role'", "messages");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
        throw bad_request(where + ": unknown role '" + role + "'", "messages");
    json out;
    out["role"] = role == "developer" ? "system" : role;
    // Images only in user messages, as OpenAI allows them.
    out["content"] = text_content(m.contains("content") ? m["content"] : json(), where.c_str(),
                                  role == "user" ? &images : nullptr);
    if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
        if (!m["tool_calls"].is_array()) throw bad_request(where + ": 'tool_calls' must be an array", "messages");
        json calls = json::array();
        for (const auto& c : m["tool_calls"]) {
            if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
                !c["function"].contains("name") || !c["function"]["name"].is_string())
                throw bad_request(where + ": malformed tool call", "messages");
            json call = c;
            // Templates index arguments as an object; clients send a JSON string.
            auto& args = call["function"]["arguments"];
            if (args.is_string()) {
                try {
                    args = parse_json_bounded(args.get<std::string>());
                } catch (const json::exception&) {
                    // keep the string: the template will show it as is
                } catch (const Error& e) {
                    throw bad_request(where + ": tool call arguments: " + e.what(), "messages");
                }
            }
            calls.push_back(call);
        }
        out["tool_calls"] = calls;
    }
    if (role == "tool") {
        if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) out["tool_call_id"] = m["tool_call_id"];
        if (m.contains("name") && m["name"].is_string()) out["name"] = m["name"];
    }
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
        out["reasoning_content"] = m["reasoning_content"];
    return out;
}

// One Anthropic message, as OpenAI-style messages appended to `messages`:
// tool results first (one tool message each), then the text and tool calls.
void anthropic_message(const json& m, size_t i, json& messages, std::vector<std::vector<uint8_t>>& images) {
    const std::string where = "messages." + std::to_string(i);
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        throw bad_request(where + ": needs a string 'role'", "messages");
    const std::string role = m["role"].get<std::string>();
    if (role != "user" && role != "assistant") throw bad_request(where + ".role: must be user or assistant", "messages");
    if (!m.contains("content")) throw bad_request(where + ".content: Field required", "messages");
    const json& content = m["content"];
    if (content.is_string()) {
        messages.push_back({{"role", role}, {"content", content}});
        return;
    }
    if (!content.is_array()) throw bad_request(where + ".content: must be a string or an array of blocks", "messages");
    std::string text;
    json tool_calls = json::array();
    std::vector<json> tool_results;
    for (const auto& block : content) {
        if (!block.is_object() || !block.contains("type") || !block["type"].is_string())
            throw bad_request(where + ": every content block needs a 'type'", "messages");
        const std::string type = block["type"].get<std::string>();
        if (type == "text") {
            if (!block.contains("text") || !block["text"].is_string())
                throw bad_request(where + ": a text block needs a string 'text'", "messages");
            text += block["text"].get<std::string>();
        } else if (type == "tool_use" && role == "assistant") {
            if (!block.contains("name") || !block["name"].is_string() || !block.contains("id") || !block["id"].is_string())
                throw bad_request(where + ": a tool_use block needs 'id' and 'name'", "messages");
            json input = block.contains("input") ? block["input"] : json::object();
            tool_calls.push_back({{"id", block["id"]}, {"type", "function"},
                                  {"function", {{"name", block["name"]}, {"arguments", input}}}});
        } else if (type == "tool_result" && role == "user") {
            if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string())
                throw bad_request(where + ": a tool_result block needs 'tool_use_id'", "messages");
            std::string result = block.contains("content") ? text_content(block["content"], where.c_str()) : "";
            tool_results.push_back({{"role", "tool"}, {"tool_call_id", block["tool_use_id"]}, {"content", result}});
        } else if (type == "image" && role == "user") {
            const json* src = block.contains("source") ? &block["source"] : nullptr;
            if (!src || !src->is_object() || !src->contains("type") || !(*src)["type"].is_string())
                throw bad_request(where + ": an image block needs a 'source' with a 'type'", "messages");
            if ((*src)["type"] != "base64")
                throw bad_request(where + ": image sources other than base64 are not supported (the server fetches nothing)",
                                  "messages");
            if (!src->contains("media_type") || !(*src)["media_type"].is_string() || !src->contains("data") ||
                !(*src)["data"].is_string())
                throw bad_request(where + ": a base64 image source needs string 'media_type' and 'data'", "messages");
            add_image(&images, image_from_base64((*src)["media_type"].get<std::string>(), (*src)["data"].get<std::string>()),
                      text, where);
        } else if (type == "thinking" || type == "redacted_thinking") {
            // Earlier reasoning is not shown to the model again.
        } else {
            throw bad_request(where + ": content blocks of type '" + type + "' are not supported", "messages");
        }
    }
    for (auto& r : tool_results) messages.push_back(std::move(r));
    if (!text.empty() || !tool_calls.empty() || tool_results.empty()) {
        json out = {{"role", role}, {"content", text}};
        if (!tool_calls.empty()) out["tool_calls"] = tool_calls;
        messages.push_back(out);
    }
}

}  // namespace

ChatJob parse_openai_chat(const json& body, const sampling::SamplingParams& defaults) {
    ChatJob job;
    if (field(body, "model")) job.model = string_field(body, "model");
    const json* messages = field(body, "messages");
    if (!messages) throw bad_request("'messages' is required", "messages");
    if (!messages->is_array() || messages->empty()) throw bad_request("'messages' must be a non-empty array", "messages");
    for (size_t i = 0; i < messages->size(); ++i)
        job.messages.push_back(openai_message((*messages)[i], i, job.image_bytes));
    if (const json* tools = field(body, "tools")) {
        job.tools = validate_tools(*tools);
        if (job.tools.empty()) job.tools = json();
    }
    if (const json* tc = field(body, "tool_choice")) {
        if (tc->is_string()) {
            job.tool_choice = tc->get<std::string>();
            if (job.tool_choice != "auto" && job.tool_choice != "none" && job.tool_choice != "required")
                throw bad_request("'tool_choice' must be auto, none, required or a function", "tool_choice");
        } else if (tc->is_object() && tc->contains("function") && (*tc)["function"].is_object() &&
                   (*tc)["function"].contains("name") && (*tc)["function"]["name"].is_string()) {
            job.tool_choice = (*tc)["function"]["name"].get<std::string>();
        } else {
            throw bad_request("'tool_choice' must be auto, none, required or a function", "tool_choice");
        }
        if (job.tool_choice != "auto" && job.tool_choice != "none" && job.tools.is_null())
            throw bad_request("'tool_choice' needs 'tools'", "tool_choice");
    }
    if (field(body, "parallel_tool_calls")) job.parallel_tool_calls = bool_field(body, "parallel_tool_calls");
    if (field(body, "stream")) job.stream = bool_field(body, "stream");
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw bad_request("'stream_options' must be an object", "stream_options");
        if (field(*so, "include_usage")) job.include_usage = bool_field(*so, "include_usage");
    }
    if (field(body, "logprobs")) job.logprobs = bool_field(body, "logprobs");
    if (field(body, "top_logprobs")) {
        const auto n = integer_field(body, "top_logprobs", 0, 20);
        if (!job.logprobs) throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
        job.gen.top_logprobs = static_cast<int32_t>(n);
    } else if (job.logprobs) {
        job.gen.top_logprobs = 0;
    }
    if (const json* rf = field(body, "response_format")) {
        if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string())
            throw bad_request("'response_format' must be an object with a 'type'", "response_format");
        const std::string type = (*rf)["type"].get<std::string>();
        if (type == "json_object") {
            job.response_schema = json::object();
            if (rf->contains("schema") && (*rf)["schema"].is_object()) job.response_schema = (*rf)["schema"];
        } else if (type == "json_schema") {
            const json* js = field(*rf, "json_schema");
            if (!js || !js->is_object()) throw bad_request("'response_format.json_schema' must be an object", "response_format");
            const json* schema = field(*js, "schema");
            if (!schema || !schema->is_object()) throw bad_request("'response_format.json_schema.schema' must be an object", "response_format");
            job.response_schema = *schema;
        } else if (type != "text") {
            throw bad_request("'response_format.type' must be text, json_object or json_schema", "response_format");
        }
    }
    if (const json* kw = field(body, "chat_template_kwargs")) {
        if (!kw->is_object()) throw bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
        job.template_kwargs = *kw;
    }
    parse_openai_sampling(body, job.gen, true, defaults, &job.n_choices);
    return job;
}

ChatJob parse_anthropic_messages(const json& body, const sampling::SamplingParams& defaults) {
    ChatJob job;
    if (field(body, "model")) job.model = string_field(body, "model");
    if (!field(body, "max_tokens")) throw bad_request("max_tokens: Field required", "max_tokens");
    job.gen.max_tokens = static_cast<int32_t>(integer_field(body, "max_tokens", 1, 1 << 24));
    auto& s = job.gen.sampling;
    s = defaults;  // as the OpenAI routes: the server's settings for what the request leaves out
    if (field(body, "temperature")) s.temp = static_cast<float>(number_field(body, "temperature", 0, 1));
    if (field(body, "top_p")) s.top_p = static_cast<float>(number_field(body, "top_p", 0, 1));
    if (field(body, "top_k")) s.top_k = static_cast<int32_t>(integer_field(body, "top_k", 0, 1 << 20));
    job.gen.stop = stop_list(body, "stop_sequences", 16);
    parse_speculative(body, job.gen.speculative);
    if (field(body, "stream")) job.stream = bool_field(body, "stream");
    job.include_usage = true;

    if (const json* sys = field(body, "system")) {
        std::string text = text_content(*sys, "system");
        if (!text.empty()) job.messages.push_back({{"role", "system"}, {"content", text}});
    }
    const json* messages = field(body, "messages");
    if (!messages) throw bad_request("messages: Field required", "messages");
    if (!messages->is_array() || messages->empty()) throw bad_request("messages: must be a non-empty array", "messages");
    for (size_t i = 0; i < messages->size(); ++i) anthropic_message((*messages)[i], i, job.messages, job.image_bytes);
    if (const json* tools = field(body, "tools")) {
        if (!tools->is_array()) throw bad_request("tools: must be an array", "tools");
        json converted = json::array();
        for (const auto& t : *tools) {
            if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
                throw bad_request("tools: every tool needs a 'name'", "tools");
            if (t.contains("input_schema") && !t["input_schema"].is_object())
                throw bad_request("tools: 'input_schema' must be an object", "tools");
            json f = {{"name", t["name"]}};
            if (t.contains("description")) f["description"] = t["description"];
            f["parameters"] = t.contains("input_schema") ? t["input_schema"] : json{{"type", "object"}};
            converted.push_back({{"type", "function"}, {"function", f}});
        }
        if (!converted.empty()) job.tools = converted;
    }
    if (const json* tc = field(body, "tool_choice")) {
        if (!tc->is_object() || !tc->contains("type") || !(*tc)["type"].is_string())
            throw bad_request("tool_choice: must be an object with a 'type'", "tool_choice");
        const std::string type = (*tc)["type"].get<std::string>();
        if (type == "auto") job.tool_choice = "auto";
        else if (type == "none") job.tool_choice = "none";
        else if (type == "any") job.tool_choice = "required";
        else if (type == "tool" && tc->contains("name") && (*tc)["name"].is_string()) job.tool_choice = (*tc)["name"];
        else throw bad_request("tool_choice: type must be auto, any, tool or none", "tool_choice");
        if (tc->contains("disable_parallel_tool_use") && (*tc)["disable_parallel_tool_use"].is_boolean())
            job.parallel_tool_calls = !(*tc)["disable_parallel_tool_use"].get<bool>();
        if (job.tool_choice != "auto" && job.tool_choice != "none" && job.tools.is_null())
            throw bad_request("tool_choice: needs tools", "tool_choice");
    }
    return job;
}

}  // namespace cria::server
