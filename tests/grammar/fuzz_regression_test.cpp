// Inputs the fuzzers (fuzz/grammar_*_fuzz.cpp) found, kept in
// tests/data/grammar-cases/: *.gbnf for the parser and printer, *.json for
// the schema converter. Each must be refused with cria::Error or handled;
// a grammar that parses must print back to GBNF that parses again.

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/grammar/automaton.h"
#include "cria/grammar/gbnf.h"
#include "cria/grammar/json_schema.h"
#include "support/test_paths.h"

using namespace cria::grammar;

namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST(GrammarFuzzRegressions, ReplayAll) {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(cria::test::data_path("grammar-cases"))) {
        const auto& path = entry.path();
        std::string text = slurp(path);
        if (path.extension() == ".gbnf") {
            ++n;
            try {
                Grammar g = parse_gbnf(text);
                EXPECT_NO_THROW(parse_gbnf(g.to_gbnf())) << path << "\n" << g.to_gbnf();
            } catch (const cria::Error&) {
            }
        } else if (path.extension() == ".json") {
            ++n;
            try {
                std::string gbnf = json_schema_to_gbnf(nlohmann::json::parse(text));
                EXPECT_NO_THROW(parse_gbnf(gbnf)) << path;
            } catch (const cria::Error&) {
            }
        }
    }
    EXPECT_GE(n, 2u);
}

TEST(GrammarFuzzRegressions, CaretInClassPrintsBack) {
    Grammar g = parse_gbnf(slurp(cria::test::data_path("grammar-cases/gbnf-caret-in-class.gbnf")));
    Grammar again = parse_gbnf(g.to_gbnf());
    EXPECT_TRUE(matches(again, "!^_^x"));
    EXPECT_FALSE(matches(again, "!^_bx"));
}

TEST(GrammarFuzzRegressions, RepeatedNullablePatternIsAClearError) {
    try {
        json_schema_to_gbnf(nlohmann::json::parse(slurp(cria::test::data_path("grammar-cases/schema-nullable-repeat.json"))));
        FAIL() << "expected an error";
    } catch (const cria::Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be expressed"), std::string::npos) << e.what();
    }
}

TEST(GrammarFuzzRegressions, WrongValueTypesAreErrors) {
    for (const char* s : {R"({"required": [1], "properties": {}})", R"({"allOf": [{"properties": {}, "required": [2]}, {"properties": {}}]})",
                          R"({"allOf": [{"$ref": 3}, {"properties": {}}]})"}) {
        EXPECT_THROW(json_schema_to_gbnf(nlohmann::json::parse(s)), cria::Error) << s;
    }
}

TEST(ToolCallGrammar, DefsOfSeveralToolsDoNotCollide) {
    auto tools = nlohmann::json::parse(R"([
      {"function": {"name": "a", "parameters": {"$defs": {"X": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/X"}}, "required": ["x"]}}},
      {"function": {"name": "b", "parameters": {"$defs": {"X": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/X"}}, "required": ["x"]}}}
    ])");
    Grammar g = parse_gbnf(tool_call_grammar(tools).gbnf);
    EXPECT_TRUE(matches(g, R"(<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>)"));
    EXPECT_TRUE(matches(g, R"(<tool_call>{"name": "b", "arguments": {"x": "s"}}</tool_call>)"));
    EXPECT_FALSE(matches(g, R"(<tool_call>{"name": "a", "arguments": {"x": "s"}}</tool_call>)"));
    EXPECT_FALSE(matches(g, R"(<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>)"));
}
