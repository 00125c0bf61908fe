#pragma once
// JSON Schema -> GBNF, and grammars for tool calls.
//
// Supported: type (also arrays of types), enum, const, properties, required,
// additionalProperties, items, prefixItems, minItems, maxItems, minLength,
// maxLength, pattern (a regex subset), format (date, time, date-time, uuid,
// email), minimum / maximum / exclusiveMinimum / exclusiveMaximum on
// integers, anyOf, oneOf (as anyOf), allOf (of object schemas), $ref into
// $defs / definitions (recursion included), nullable. Annotations (title,
// description, $schema, $id, $comment, examples, default, deprecated,
// readOnly, writeOnly) are ignored; any other keyword is an error rather
// than a silently weaker grammar. Objects without additionalProperties
// accept only their listed properties, in schema order, required ones first
// (as llama.cpp does).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cria::grammar {

// Throws cria::Error naming the offending keyword or value.
std::string json_schema_to_gbnf(const nlohmann::json& schema);

enum class ToolCallFormat {
    Hermes,  // <tool_call>{"name": ..., "arguments": {...}}</tool_call>
    Json,    // {"name": ..., "arguments": {...}}
};

struct ToolCallGrammar {
    std::string gbnf;
    std::vector<std::string> trigger_words;  // for a lazy sampler; empty for Json
};

// Grammar for calls to OpenAI-style tools: [{"type": "function", "function":
// {"name": ..., "parameters": <schema>}}, ...]. `parallel` allows several calls.
ToolCallGrammar tool_call_grammar(const nlohmann::json& tools, ToolCallFormat format = ToolCallFormat::Hermes, bool parallel = false);

}  // namespace cria::grammar
