// JSON Schema -> GBNF. One rule per schema node, named after where it sits
// in the schema (root, root-name, ...), with shared primitive rules.

#include "grammar/schema_converter.h"

#include <cmath>

#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "cria/grammar/json_schema.h"

namespace cria::grammar {
namespace {

using nlohmann::json;

// Built-in rules: name -> {body, dependencies}.
struct Primitive {
    const char* body;
    std::vector<const char*> deps;
};
const std::map<std::string, Primitive>& primitives() {
    static const std::map<std::string, Primitive> table = {
        {"space", {R"(| " " | "\n" [ \t]{0,20})", {}}},
        {"boolean", {R"(("true" | "false") space)", {"space"}}},
        {"null", {R"("null" space)", {"space"}}},
        {"integral-part", {R"([0] | [1-9] [0-9]{0,15})", {}}},
        {"decimal-part", {R"([0-9]{1,16})", {}}},
        {"integer", {R"(("-"? integral-part) space)", {"integral-part", "space"}}},
        {"number", {R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)? space)", {"integral-part", "decimal-part", "space"}}},
        {"char", {R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", {}}},
        {"string", {R"("\"" char* "\"" space)", {"char", "space"}}},
        {"value", {R"(object | array | string | number | boolean | null)", {"object", "array", "string", "number", "boolean", "null"}}},
        {"object", {R"("{" space ( string ":" space value ("," space string ":" space value)* )? "}" space)", {"string", "value", "space"}}},
        {"array", {R"("[" space ( value ("," space value)* )? "]" space)", {"value", "space"}}},
        {"date", {R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", {}}},
        {"time", {R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))", {}}},
        {"date-time", {R"(date "T" time)", {"date", "time"}}},
        {"date-string", {R"("\"" date "\"" space)", {"date", "space"}}},
        {"time-string", {R"("\"" time "\"" space)", {"time", "space"}}},
        {"date-time-string", {R"("\"" date-time "\"" space)", {"date-time", "space"}}},
        {"uuid", {R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space)", {"space"}}},
        {"email", {R"("\"" [A-Za-z0-9._%+\-]+ "@" [A-Za-z0-9\-]+ ("." [A-Za-z0-9\-]+)+ "\"" space)", {"space"}}},
    };
    return table;
}

const std::set<std::string>& known_keywords() {
    static const std::set<std::string> k = {
        "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
        "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
        "nullable",
        // annotations: no effect on the language
        "title", "description", "$schema", "$id", "$comment", "examples", "default", "deprecated", "readOnly",
        "writeOnly"};
    return k;
}

std::string sanitize(const std::string& name) {
    std::string out;
    for (char c : name) out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '-';
    return out.empty() ? "r" : out;
}

[[noreturn]] void fail(const std::string& what) { throw Error("json schema: " + what); }

uint64_t count_of(const json& schema, const char* key) {
    const json& v = schema.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(std::string(key) + " must be a non-negative integer");
    uint64_t n = v.get<uint64_t>();
    if (n > 100000) fail(std::string(key) + " above 100000");
    return n;
}

}  // namespace

std::string SchemaConverter::literal(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            const char* hex = "0123456789ABCDEF";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else out += static_cast<char>(c);
    }
    return out + "\"";
}

std::string SchemaConverter::json_literal(const json& value) {
    return literal(value.dump(-1, ' ', false, json::error_handler_t::strict)) + " space";
}

std::string SchemaConverter::add_rule(const std::string& raw_name, const std::string& body) {
    std::string name = sanitize(raw_name);
    for (int i = 0;; ++i) {
        std::string candidate = i == 0 ? name : name + std::to_string(i);
        auto it = rules_.find(candidate);
        if (it == rules_.end()) { rules_.emplace(candidate, body); return candidate; }
        if (it->second == body) return candidate;
    }
}

std::string SchemaConverter::primitive(const std::string& name) {
    const Primitive& p = primitives().at(name);
    if (rules_.count(name)) return name;
    rules_.emplace(name, p.body);
    for (const char* dep : p.deps) primitive(dep);
    return name;
}

std::string SchemaConverter::gbnf() const {
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
}

std::string SchemaConverter::resolve_ref(const std::string& ref) {
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;
    if (ref.empty() || ref[0] != '#') fail("only local $ref ('#/...') are supported: '" + ref + "'");
    const json* target = &root_;
    std::string rest = ref.substr(1);
    if (!rest.empty()) {
        if (rest[0] != '/') fail("bad $ref '" + ref + "'");
        try {
            target = &root_.at(json::json_pointer(rest));
        } catch (const json::exception&) {
            fail("$ref '" + ref + "' points nowhere");
        }
    }
    size_t slash = ref.find_last_of('/');
    std::string name = ref_prefix_ + "ref-" + sanitize(slash == std::string::npos ? "root" : ref.substr(slash + 1));
    // Reserve the name before visiting so a recursive reference finds it.
    while (rules_.count(name)) name += "-";
    rules_.emplace(name, "\"\"");
    ref_rules_.emplace(ref, name);
    std::string inner = visit(*target, name + "-body");
    rules_[name] = inner;
    return name;
}

std::string SchemaConverter::visit(const json& schema, const std::string& name) {
    struct DepthGuard {
        int& depth;
        explicit DepthGuard(int& d) : depth(++d) {}
        ~DepthGuard() { --depth; }
    } guard(depth_);
    if (depth_ > kMaxDepth)
        fail("the schema is nested deeper than " + std::to_string(kMaxDepth) + " levels (at " + name.substr(0, 64) +
             "...)");
    if (schema.is_boolean()) {
        if (!schema.get<bool>()) fail("schema 'false' (at " + name + ") matches nothing");
        return primitive("value");
    }
    if (!schema.is_object()) fail("a schema must be an object or a boolean (at " + name + ")");
    for (const auto& [key, v] : schema.items()) {
        if (!known_keywords().count(key)) fail("unsupported keyword '" + key + "' (at " + name + ")");
    }
    if (schema.contains("nullable")) {
        if (!schema["nullable"].is_boolean()) fail("nullable must be a boolean");
        if (schema["nullable"].get<bool>()) {
            json rest = schema;
            rest.erase("nullable");
            std::string inner = visit(rest, name + "-nonnull");
            return add_rule(name, inner + " | " + primitive("null"));
        }
    }
    if (schema.contains("$ref")) {
        if (!schema["$ref"].is_string()) fail("$ref must be a string");
        return resolve_ref(schema["$ref"].get<std::string>());
    }
    if (schema.contains("const") || schema.contains("enum")) primitive("space");
    if (schema.contains("const")) return add_rule(name, json_literal(schema["const"]));
    if (schema.contains("enum")) {
        const json& e = schema["enum"];
        if (!e.is_array() || e.empty()) fail("enum must be a non-empty array");
        std::string body;
        for (const json& v : e) body += (body.empty() ? "" : " | ") + json_literal(v);
        return add_rule(name, body);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        if (!schema.contains(key)) continue;
        const json& alts = schema[key];
        if (!alts.is_array() || alts.empty()) fail(std::string(key) + " must be a non-empty array");
        std::string body;
        for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + visit(alts[i], name + "-" + std::to_string(i));
        return add_rule(name, body);
    }
    if (schema.contains("allOf")) {
        const json& parts = schema["allOf"];
        if (!parts.is_array() || parts.empty()) fail("allOf must be a non-empty array");
        if (parts.size() == 1) return visit(parts[0], name);
        // Intersection of object schemas: all their properties, all their required.
        json properties = json::object();
        std::set<std::string> required;
        for (const json& part0 : parts) {
            const json* part = &part0;
            while (part->is_object() && part->contains("$ref")) {
                std::string ref = (*part)["$ref"].get<std::string>();
                try {
                    part = ref == "#" ? &root_ : &root_.at(json::json_pointer(ref.substr(1)));
                } catch (const json::exception&) {
                    fail("$ref '" + ref + "' points nowhere");
                }
            }
            if (!part->is_object() || !part->contains("properties")) fail("allOf is supported only over object schemas with properties");
            for (const auto& [k, v] : (*part)["properties"].items()) properties[k] = v;
            if (part->contains("required")) for (const json& r : (*part)["required"]) required.insert(r.get<std::string>());
        }
        return object_rule(properties, required, nullptr, name);
    }
    if (schema.contains("type") && schema["type"].is_array()) {
        const json& types = schema["type"];
        if (types.empty()) fail("type array is empty");
        std::string body;
        for (size_t i = 0; i < types.size(); ++i) {
            json one = schema;
            one["type"] = types[i];
            body += (i ? " | " : "") + visit(one, name + "-" + (types[i].is_string() ? types[i].get<std::string>() : "t"));
        }
        return add_rule(name, body);
    }
    std::string type;
    if (schema.contains("type")) {
        if (!schema["type"].is_string()) fail("type must be a string or an array of strings");
        type = schema["type"].get<std::string>();
    } else if (schema.contains("properties") || schema.contains("additionalProperties")) {
        type = "object";
    } else if (schema.contains("items") || schema.contains("prefixItems")) {
        type = "array";
    } else if (schema.contains("pattern") || schema.contains("format") || schema.contains("minLength") || schema.contains("maxLength")) {
        type = "string";
    } else if (schema.contains("minimum") || schema.contains("maximum") || schema.contains("exclusiveMinimum") || schema.contains("exclusiveMaximum")) {
        type = "number";
    }
    if (type.empty()) return primitive("value");
    if (type == "object") {
        std::set<std::string> required;
        if (schema.contains("required")) {
            if (!schema["required"].is_array()) fail("required must be an array");
            for (const json& r : schema["required"]) {
                if (!r.is_string()) fail("required entries must be strings");
                required.insert(r.get<std::string>());
            }
        }
        const json empty = json::object();
        const json& props = schema.contains("properties") ? schema["properties"] : empty;
        if (!props.is_object()) fail("properties must be an object");
        const json* additional = schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
        if (!schema.contains("properties") && !additional) return add_rule(name, primitive("object"));
        return object_rule(props, required, additional, name);
    }
    if (type == "array") return array_rule(schema, name);
    if (type == "string") return string_rule(schema, name);
    if (type == "integer") return integer_rule(schema, name);
    if (type == "number") {
        for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
            if (schema.contains(k)) fail(std::string(k) + " is supported on integers only (at " + name + ")");
        }
        return primitive("number");
    }
    if (type == "boolean") return primitive("boolean");
    if (type == "null") return primitive("null");
    fail("unknown type '" + type + "'");
}

std::string SchemaConverter::object_rule(const json& properties, const std::set<std::string>& required,
                                         const json* additional, const std::string& name) {
    std::vector<std::string> req_kv, opt_kv;
    for (const auto& r : required) {
        if (!properties.contains(r)) fail("required property '" + r + "' is not in properties (at " + name + ")");
    }
    primitive("space");
    for (const auto& [key, sub] : properties.items()) {
        std::string value_rule = visit(sub, name + "-" + key);
        std::string kv = add_rule(name + "-" + key + "-kv", literal(json(key).dump()) + " space \":\" space " + value_rule);
        (required.count(key) ? req_kv : opt_kv).push_back(kv);
    }
    if (additional) {
        bool allowed = additional->is_object() || (additional->is_boolean() && additional->get<bool>());
        if (!additional->is_boolean() && !additional->is_object()) fail("additionalProperties must be a boolean or a schema");
        if (allowed) {
            std::string value_rule = additional->is_object() ? visit(*additional, name + "-additional-value") : primitive("value");
            std::string kv = add_rule(name + "-additional-kv", primitive("string") + " \":\" space " + value_rule);
            opt_kv.push_back(add_rule(name + "-additional-kvs", kv + " (\",\" space " + kv + ")*"));
        }
    }
    // opt_i ::= kv_i ("," space opt_{i+1})? | opt_{i+1}: any in-order subset of the optional ones.
    std::string opt_first;
    for (size_t i = opt_kv.size(); i-- > 0;) {
        std::string body = opt_kv[i];
        if (!opt_first.empty()) body += " (\",\" space " + opt_first + ")? | " + opt_first;
        opt_first = add_rule(name + "-opt" + std::to_string(i), body);
    }
    std::string body = "\"{\" space ";
    if (!req_kv.empty()) {
        for (size_t i = 0; i < req_kv.size(); ++i) body += (i ? " \",\" space " : "") + req_kv[i];
        if (!opt_first.empty()) body += " ( \",\" space " + opt_first + " )?";
    } else if (!opt_first.empty()) {
        body += "( " + opt_first + " )?";
    }
    body += " \"}\" space";
    return add_rule(name, body);
}

std::string SchemaConverter::array_rule(const json& schema, const std::string& name) {
    primitive("space");
    if (schema.contains("prefixItems")) {
        const json& prefix = schema["prefixItems"];
        if (!prefix.is_array()) fail("prefixItems must be an array");
        if (schema.contains("items") && !(schema["items"].is_boolean() && !schema["items"].get<bool>())) {
            fail("prefixItems with further items is not supported (use \"items\": false)");
        }
        std::string body = "\"[\" space ";
        for (size_t i = 0; i < prefix.size(); ++i) body += (i ? " \",\" space " : "") + visit(prefix[i], name + "-" + std::to_string(i));
        return add_rule(name, body + " \"]\" space");
    }
    std::string item = schema.contains("items") ? visit(schema["items"], name + "-item") : primitive("value");
    uint64_t min = schema.contains("minItems") ? count_of(schema, "minItems") : 0;
    std::optional<uint64_t> max;
    if (schema.contains("maxItems")) max = count_of(schema, "maxItems");
    if (max && *max < min) fail("maxItems below minItems (at " + name + ")");
    std::string body = "\"[\" space ";
    if (!max || *max > 0) {
        std::string more = "(\",\" space " + item + ")";
        uint64_t more_min = min > 0 ? min - 1 : 0;
        std::string rep = "{" + std::to_string(more_min) + "," + (max ? std::to_string(*max - 1) : "") + "}";
        std::string list = item + " " + more + rep;
        body += min > 0 ? list : "( " + list + " )?";
    }
    return add_rule(name, body + " \"]\" space");
}

std::string SchemaConverter::string_rule(const json& schema, const std::string& name) {
    if (schema.contains("format")) {
        static const std::map<std::string, std::string> formats = {
            {"date", "date-string"}, {"time", "time-string"}, {"date-time", "date-time-string"}, {"uuid", "uuid"}, {"email", "email"}};
        const json& f = schema["format"];
        if (!f.is_string() || !formats.count(f.get<std::string>())) fail("unsupported format " + f.dump() + " (at " + name + ")");
        if (schema.contains("pattern") || schema.contains("minLength") || schema.contains("maxLength")) {
            fail("format combined with pattern/minLength/maxLength is not supported (at " + name + ")");
        }
        return primitive(formats.at(f.get<std::string>()));
    }
    if (schema.contains("pattern")) {
        if (!schema["pattern"].is_string()) fail("pattern must be a string");
        if (schema.contains("minLength") || schema.contains("maxLength")) fail("pattern combined with minLength/maxLength is not supported (at " + name + ")");
        std::string expr = regex_to_gbnf(schema["pattern"].get<std::string>(), primitive("char"));
        primitive("space");
        return add_rule(name, "\"\\\"\" " + expr + " \"\\\"\" space");
    }
    if (schema.contains("minLength") || schema.contains("maxLength")) {
        uint64_t min = schema.contains("minLength") ? count_of(schema, "minLength") : 0;
        std::optional<uint64_t> max;
        if (schema.contains("maxLength")) max = count_of(schema, "maxLength");
        if (max && *max < min) fail("maxLength below minLength (at " + name + ")");
        primitive("char");
        primitive("space");
        return add_rule(name, "\"\\\"\" char{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "} \"\\\"\" space");
    }
    return primitive("string");
}

std::string SchemaConverter::integer_rule(const json& schema, const std::string& name) {
    std::optional<int64_t> lo, hi;
    auto number = [&](const char* key) {
        const json& v = schema[key];
        if (!v.is_number()) fail(std::string(key) + " must be a number");
        double d = v.get<double>();
        if (!std::isfinite(d) || std::fabs(d) >= 1e18) fail(std::string(key) + " out of range");
        return d;
    };
    if (schema.contains("minimum")) lo = static_cast<int64_t>(std::ceil(number("minimum")));
    if (schema.contains("maximum")) hi = static_cast<int64_t>(std::floor(number("maximum")));
    if (schema.contains("exclusiveMinimum")) {
        const json& v = schema["exclusiveMinimum"];
        if (v.is_boolean()) {  // draft 4: modifies minimum
            if (v.get<bool>() && lo && static_cast<double>(*lo) == std::ceil(schema["minimum"].get<double>()) &&
                schema["minimum"].get<double>() == std::ceil(schema["minimum"].get<double>())) ++*lo;
        } else {
            int64_t x = static_cast<int64_t>(std::floor(number("exclusiveMinimum"))) + 1;
            lo = lo ? std::max(*lo, x) : x;
        }
    }
    if (schema.contains("exclusiveMaximum")) {
        const json& v = schema["exclusiveMaximum"];
        if (v.is_boolean()) {
            if (v.get<bool>() && hi && schema["maximum"].get<double>() == std::floor(schema["maximum"].get<double>())) --*hi;
        } else {
            int64_t x = static_cast<int64_t>(std::ceil(number("exclusiveMaximum"))) - 1;
            hi = hi ? std::min(*hi, x) : x;
        }
    }
    if (!lo && !hi) return primitive("integer");
    primitive("space");
    return add_rule(name, integer_range_gbnf(lo, hi) + " space");
}

std::string json_schema_to_gbnf(const nlohmann::json& schema) {
    SchemaConverter converter(schema);
    try {
        std::string top = converter.visit(schema, "root-value");
        converter.add_rule("root", top);
    } catch (const json::exception& e) {
        // A keyword with a value of the wrong JSON type.
        throw Error(std::string("json schema: bad value: ") + e.what());
    }
    std::string gbnf = converter.gbnf();
    // Some patterns translate into grammars the matcher cannot run (a
    // repetition of something that can be empty, e.g. "(a|)*", is left
    // recursive): refuse them here, with the grammar's reason.
    try {
        (void)parse_gbnf(gbnf);
    } catch (const Error& e) {
        throw Error(std::string("json schema: cannot be expressed as a grammar: ") + e.what());
    }
    return gbnf;
}

}  // namespace cria::grammar
