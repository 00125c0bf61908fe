#pragma once
// JSON Schema -> GBNF rules (private: used by json_schema_to_gbnf and the
// tool-call grammar builder).

#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace cria::grammar {

class SchemaConverter {
public:
    // `ref_prefix` starts the names of $ref rules, so several converters'
    // rules can share one grammar.
    explicit SchemaConverter(const nlohmann::json& root, std::string ref_prefix = "") : root_(root), ref_prefix_(std::move(ref_prefix)) {}

    // Schemas nested deeper than this are refused (cria::Error naming the
    // limit): the converter recurses once per level, and a request may carry
    // a schema thousands of levels deep.
    static constexpr int kMaxDepth = 64;

    // Adds the rules for `schema` and returns the name of its rule.
    std::string visit(const nlohmann::json& schema, const std::string& name);
    // Adds (or reuses) a rule; returns its final name.
    std::string add_rule(const std::string& name, const std::string& body);
    std::string gbnf() const;

    static std::string literal(const std::string& text);  // GBNF string literal
    // A JSON value as the grammar text matching exactly it (with trailing space).
    static std::string json_literal(const nlohmann::json& value);

private:
    std::string primitive(const std::string& name);  // adds a built-in rule and its dependencies
    std::string object_rule(const nlohmann::json& properties, const std::set<std::string>& required,
                            const nlohmann::json* additional, const std::string& name);
    std::string array_rule(const nlohmann::json& schema, const std::string& name);
    std::string string_rule(const nlohmann::json& schema, const std::string& name);
    std::string integer_rule(const nlohmann::json& schema, const std::string& name);
    std::string resolve_ref(const std::string& ref);

    const nlohmann::json& root_;
    std::string ref_prefix_;
    int depth_ = 0;  // visit() calls on the stack
    std::map<std::string, std::string> rules_;
    std::map<std::string, std::string> ref_rules_;  // $ref -> rule name (set before visiting: recursion)
};

// Regex (the subset JSON Schema patterns use) -> GBNF expression matching
// the string's characters; `char_rule` is the rule for "any JSON string char".
std::string regex_to_gbnf(const std::string& pattern, const std::string& char_rule);

// GBNF expression for the decimal integers in [min, max] (either side open).
std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max);

}  // namespace cria::grammar
