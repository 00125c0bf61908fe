// Grammars for tool calls, built from OpenAI-style tool definitions.

#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "cria/grammar/json_schema.h"
#include "grammar/schema_converter.h"

namespace cria::grammar {

ToolCallGrammar tool_call_grammar(const nlohmann::json& tools, ToolCallFormat format, bool parallel) {
    using nlohmann::json;
    if (!tools.is_array() || tools.empty()) throw Error("tool calls: tools must be a non-empty array");
    // $ref inside parameters are resolved against the parameters object of each tool.
    std::string alternatives;
    std::vector<std::unique_ptr<SchemaConverter>> keep;
    std::map<std::string, std::string> merged;
    ToolCallGrammar out;
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& tool = tools[i];
        const json* fn = &tool;
        if (tool.is_object() && tool.contains("function")) fn = &tool["function"];
        if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
            throw Error("tool calls: tool " + std::to_string(i) + " has no function name");
        }
        std::string name = (*fn)["name"].get<std::string>();
        const json params = fn->contains("parameters") ? (*fn)["parameters"] : json{{"type", "object"}};
        std::string prefix = "tool" + std::to_string(i);
        keep.push_back(std::make_unique<SchemaConverter>(params, prefix + "-"));
        SchemaConverter* converter = keep.back().get();
        std::string args;
        try {
            args = converter->visit(params, prefix + "-args");
        } catch (const json::exception& e) {
            throw Error(std::string("tool calls: bad parameters of '") + name + "': " + e.what());
        }
        std::string call = converter->add_rule(prefix + "-call",
            "\"{\" space " + SchemaConverter::literal("\"name\"") + " space \":\" space " +
            SchemaConverter::literal(json(name).dump()) + " space \",\" space " + SchemaConverter::literal("\"arguments\"") +
            " space \":\" space " + args + " \"}\" space");
        alternatives += (alternatives.empty() ? "" : " | ") + call;
        // Every tool's rules live in one grammar: names are prefixed per tool, primitives are identical.
        std::string g = converter->gbnf();
        size_t pos = 0;
        while (pos < g.size()) {
            size_t eol = g.find('\n', pos);
            std::string line = g.substr(pos, eol - pos);
            size_t sep = line.find(" ::= ");
            merged[line.substr(0, sep)] = line.substr(sep + 5);
            pos = eol + 1;
        }
    }
    std::string call_rule = "(" + alternatives + ")";
    std::string root;
    if (format == ToolCallFormat::Hermes) {
        std::string one = "\"<tool_call>\" space " + call_rule + " \"</tool_call>\" space";
        merged["tool-call"] = one;
        root = parallel ? "tool-call+" : "tool-call";
        out.trigger_words = {"<tool_call>"};
    } else {
        merged["tool-call"] = call_rule;
        root = parallel ? "tool-call (\",\"? space tool-call)*" : "tool-call";
    }
    merged["root"] = root;
    for (const auto& [name, body] : merged) out.gbnf += name + " ::= " + body + "\n";
    try {
        (void)parse_gbnf(out.gbnf);
    } catch (const Error& e) {
        throw Error(std::string("tool calls: parameters cannot be expressed as a grammar: ") + e.what());
    }
    return out;
}

}  // namespace cria::grammar
