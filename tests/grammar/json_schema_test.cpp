// JSON Schema -> GBNF: for each keyword, documents that must and must not match.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/grammar/automaton.h"
#include "cria/grammar/json_schema.h"

using namespace cria::grammar;
using nlohmann::json;

namespace {

struct SchemaCase {
    const char* name;
    const char* schema;
    std::vector<std::string> good;
    std::vector<std::string> bad;
};

void PrintTo(const SchemaCase& c, std::ostream* os) { *os << c.name; }

class SchemaKeywords : public ::testing::TestWithParam<SchemaCase> {};

TEST_P(SchemaKeywords, AcceptsAndRejects) {
    const SchemaCase& c = GetParam();
    std::string gbnf = json_schema_to_gbnf(json::parse(c.schema));
    Grammar g = parse_gbnf(gbnf);
    for (const auto& doc : c.good) {
        EXPECT_TRUE(json::accept(doc)) << "test bug, not JSON: " << doc;
        EXPECT_TRUE(matches(g, doc)) << c.name << " should accept " << doc << "\n" << gbnf;
    }
    for (const auto& doc : c.bad) EXPECT_FALSE(matches(g, doc)) << c.name << " should reject " << doc << "\n" << gbnf;
}

INSTANTIATE_TEST_SUITE_P(
    All, SchemaKeywords,
    ::testing::Values(
        SchemaCase{"empty", R"({})", {R"({"a": [1, "x", null]})", "3", "\"s\"", "true"}, {"tru", "{", "'a'"}},
        SchemaCase{"type_string", R"({"type": "string"})", {R"("abc")", R"("a\"b\\c\u00e9")", R"("")"}, {"1", "\"abc", "\"a\nb\""}},
        SchemaCase{"type_integer", R"({"type": "integer"})", {"0", "-12", "12345"}, {"1.5", "01", "\"1\"", "-"}},
        SchemaCase{"type_number", R"({"type": "number"})", {"0", "-1.5", "2e10", "3.25E-3"}, {"1.", ".5", "\"1\"", "+1"}},
        SchemaCase{"type_boolean", R"({"type": "boolean"})", {"true", "false"}, {"1", "\"true\"", "null"}},
        SchemaCase{"type_null", R"({"type": "null"})", {"null"}, {"0", "\"null\""}},
        SchemaCase{"type_array_of_types", R"({"type": ["string", "null"]})", {"\"x\"", "null"}, {"1", "true"}},
        SchemaCase{"type_object_plain", R"({"type": "object"})", {"{}", R"({"k": {"n": [1]}})"}, {"[]", "{\"k\"}"}},
        SchemaCase{"type_array_plain", R"({"type": "array"})", {"[]", "[1, \"a\", {}]"}, {"{}", "[1,]"}},
        SchemaCase{"enum", R"({"enum": ["red", "green", 3, null, {"a": 1}]})", {"\"red\"", "\"green\"", "3", "null", "{\"a\":1}"},
                   {"\"blue\"", "4", "\"Red\"", "{\"a\":2}"}},
        SchemaCase{"const", R"({"const": {"v": [1, "two"]}})", {R"({"v":[1,"two"]})"}, {R"({"v":[1,"three"]})", "{}"}},
        SchemaCase{"properties_required", R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]})",
                   {R"({"a": 1})", R"({"a": 1, "b": "x"})", R"({ "a" : 1 , "b" : "x" })"},
                   {R"({})", R"({"b": "x"})", R"({"a": "1"})", R"({"a": 1, "c": 2})", R"({"a": 1, "b": 2})"}},
        SchemaCase{"properties_all_optional", R"({"properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "z": {"type": "integer"}}})",
                   {"{}", R"({"x": 1})", R"({"y": 2})", R"({"x": 1, "z": 3})", R"({"x": 1, "y": 2, "z": 3})"},
                   {R"({"y": 1, "x": 2})", R"({"x": 1,})", R"({, "x": 1})", R"({"w": 1})"}},
        SchemaCase{"additional_properties_false", R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false})",
                   {"{}", R"({"a": 5})"}, {R"({"b": 5})", R"({"a": 5, "b": 6})"}},
        SchemaCase{"additional_properties_schema", R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": {"type": "string"}})",
                   {R"({"a": 5})", R"({"a": 5, "b": "x", "c": "y"})"}, {R"({"a": 5, "b": 6})", R"({"b": "x"})"}},
        SchemaCase{"additional_properties_only", R"({"type": "object", "additionalProperties": {"type": "integer"}})",
                   {"{}", R"({"x": 1, "y": 2})"}, {R"({"x": "1"})"}},
        SchemaCase{"items", R"({"type": "array", "items": {"type": "integer"}})", {"[]", "[1]", "[1, 2, 3]"}, {"[\"a\"]", "[1, \"a\"]", "{}"}},
        SchemaCase{"prefix_items", R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})",
                   {R"(["a", 1])"}, {R"([1, "a"])", R"(["a"])", R"(["a", 1, 2])"}},
        SchemaCase{"min_max_items", R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3})",
                   {"[true, false]", "[true, true, false]"}, {"[]", "[true]", "[true, true, true, true]"}},
        SchemaCase{"max_items_zero", R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"}},
        SchemaCase{"min_items_only", R"({"type": "array", "minItems": 1})", {"[1]", "[1, 2, 3, 4]"}, {"[]"}},
        SchemaCase{"min_max_length", R"({"type": "string", "minLength": 2, "maxLength": 4})",
                   {"\"ab\"", "\"abcd\"", "\"\\n\\t\"", "\"\xC3\xA9\xC3\xA9\""}, {"\"a\"", "\"abcde\"", "\"\""}},
        SchemaCase{"min_length_only", R"({"type": "string", "minLength": 3})", {"\"abc\"", "\"abcdefgh\""}, {"\"ab\""}},
        SchemaCase{"pattern_anchored", R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})", {"\"AB-123\""}, {"\"AB-12\"", "\"ab-123\"", "\"xAB-123\""}},
        SchemaCase{"pattern_unanchored", R"({"type": "string", "pattern": "ab+c"})", {"\"abc\"", "\"xxabbbcyy\""}, {"\"ac\"", "\"ab\""}},
        SchemaCase{"pattern_groups_alternation", R"({"pattern": "^(foo|ba(r|z))(?:-[0-9]+)?\\.txt$"})",
                   {"\"foo.txt\"", "\"baz-12.txt\"", "\"bar.txt\""}, {"\"ba.txt\"", "\"foo-.txt\"", "\"fooXtxt\""}},
        SchemaCase{"pattern_classes", R"({"pattern": "^[^0-9][\\w.]*\\s?\\D$"})", {"\"a_b.c x\"", "\"xy\""}, {"\"1ab\"", "\"ab1\""}},
        SchemaCase{"pattern_class_escapes", R"({"pattern": "^[\\^\\]\\-a]+[x^]$"})", {"\"^]-a^\"", "\"ax\""}, {"\"b^\"", "\"a\""}},
        SchemaCase{"pattern_dot_and_quote", R"({"pattern": "^a.c\"$"})", {"\"abc\\\"\"", "\"a\\nc\\\"\""}, {"\"abc\"", "\"ac\\\"\""}},
        SchemaCase{"format_date", R"({"type": "string", "format": "date"})", {"\"2024-02-29\"", "\"1999-12-31\""}, {"\"2024-13-01\"", "\"2024-1-01\"", "\"2024-01-32\""}},
        SchemaCase{"format_time", R"({"type": "string", "format": "time"})", {"\"23:59:59Z\"", "\"08:30:00.123+02:00\""}, {"\"24:00:00Z\"", "\"08:30:00\"", "\"8:30:00Z\""}},
        SchemaCase{"format_date_time", R"({"type": "string", "format": "date-time"})", {"\"2024-05-06T07:08:09Z\"", "\"2024-05-06T07:08:09.5-05:30\""},
                   {"\"2024-05-06 07:08:09Z\"", "\"2024-05-06\""}},
        SchemaCase{"format_uuid", R"({"type": "string", "format": "uuid"})", {"\"123e4567-e89b-12d3-a456-426614174000\""},
                   {"\"123e4567e89b12d3a456426614174000\"", "\"123e4567-e89b-12d3-a456-42661417400g\""}},
        SchemaCase{"format_email", R"({"type": "string", "format": "email"})", {"\"jane.doe+x@example.co.uk\"", "\"a@b.c\""},
                   {"\"jane@\"", "\"@example.com\"", "\"jane@example\"", "\"a b@c.d\""}},
        SchemaCase{"minimum_maximum", R"({"type": "integer", "minimum": -15, "maximum": 230})",
                   {"-15", "-9", "0", "7", "99", "100", "229", "230"}, {"-16", "-100", "231", "300", "1000", "007", "-0"}},
        SchemaCase{"minimum_only", R"({"type": "integer", "minimum": 42})", {"42", "43", "99", "100", "123456789"}, {"41", "0", "-42", "9"}},
        SchemaCase{"maximum_only", R"({"type": "integer", "maximum": -7})", {"-7", "-8", "-100", "-999999"}, {"-6", "0", "7", "-1"}},
        SchemaCase{"maximum_positive_only", R"({"type": "integer", "maximum": 15})", {"15", "0", "-3", "-123456", "9"}, {"16", "20", "150"}},
        SchemaCase{"exclusive_bounds", R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})",
                   {"1", "5", "9"}, {"0", "10", "-1", "11"}},
        SchemaCase{"exclusive_draft4", R"({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 3, "exclusiveMaximum": true})",
                   {"1", "2"}, {"0", "3"}},
        SchemaCase{"any_of", R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})", {"5", "\"a\""}, {"\"ab\"", "true"}},
        SchemaCase{"one_of", R"({"oneOf": [{"const": "a"}, {"const": "b"}]})", {"\"a\"", "\"b\""}, {"\"c\""}},
        SchemaCase{"all_of", R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]})",
                   {R"({"a": 1, "b": true})"}, {R"({"a": 1})", R"({"b": true})", R"({"a": 1, "b": 2})"}},
        SchemaCase{"ref_defs", R"({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/$defs/pos"}})",
                   {"[1, 2]", "[]"}, {"[0]", "[-1]"}},
        SchemaCase{"ref_definitions", R"({"definitions": {"s": {"type": "string"}}, "properties": {"x": {"$ref": "#/definitions/s"}}, "required": ["x"]})",
                   {R"({"x": "y"})"}, {R"({"x": 1})"}},
        SchemaCase{"ref_recursive", R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}}, "$ref": "#/$defs/node"})",
                   {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4}]}]})"}, {R"({"v": 1, "kids": [{}]})", R"({"kids": []})"}},
        SchemaCase{"ref_root", R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}, "required": ["next"]})",
                   {R"({"next": null})", R"({"next": {"next": null}})"}, {R"({"next": 1})"}},
        SchemaCase{"nullable", R"({"type": "integer", "nullable": true})", {"1", "null"}, {"\"x\""}},
        SchemaCase{"annotations_ignored", R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d", "examples": [1], "default": 1, "type": "integer"})",
                   {"1"}, {"\"1\""}},
        SchemaCase{"property_names_need_escaping", R"({"properties": {"a\"b": {"const": 1}, "é": {"const": 2}}, "required": ["a\"b", "é"]})",
                   {R"({"a\"b": 1, "é": 2})"}, {R"({"ab": 1, "é": 2})"}}));

std::string error_of(const std::string& schema) {
    try {
        json_schema_to_gbnf(json::parse(schema));
    } catch (const cria::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(JsonSchemaErrors, UnsupportedKeywordsAreErrors) {
    EXPECT_NE(error_of(R"({"type": "object", "patternProperties": {}})").find("unsupported keyword 'patternProperties'"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "number", "multipleOf": 2})").find("multipleOf"), std::string::npos);
    EXPECT_NE(error_of(R"({"not": {}})").find("'not'"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "number", "minimum": 1.5})").find("integers only"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "string", "format": "ipv4"})").find("unsupported format"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "strin"})").find("unknown type"), std::string::npos);
}

TEST(JsonSchemaErrors, BadValues) {
    EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("points nowhere"), std::string::npos);
    EXPECT_NE(error_of(R"({"$ref": "other.json#/x"})").find("local"), std::string::npos);
    EXPECT_NE(error_of(R"({"enum": []})").find("non-empty"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "array", "minItems": 3, "maxItems": 2})").find("below"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("minimum above maximum"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "object", "properties": {}, "required": ["x"]})").find("not in properties"), std::string::npos);
    EXPECT_NE(error_of("{\"pattern\": \"(?=x)\"}").find("lookaround"), std::string::npos);
    EXPECT_NE(error_of(R"({"pattern": "\\1"})").find("unsupported escape"), std::string::npos);
    EXPECT_NE(error_of(R"({"pattern": "a**"})").find("nested quantifier"), std::string::npos);
    EXPECT_NE(error_of(R"(false)").find("matches nothing"), std::string::npos);
    EXPECT_NE(error_of(R"(3)").find("must be an object"), std::string::npos);
    EXPECT_NE(error_of(R"({"type": "integer", "minimum": 1e30})").find("out of range"), std::string::npos);
}

TEST(JsonSchema, IntegerRangesExhaustive) {
    // Every bound pair over a small window: the grammar accepts exactly the integers inside.
    for (int lo = -25; lo <= 25; lo += 7) {
        for (int hi = lo; hi <= 130; hi += 11) {
            json schema = {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}};
            Grammar g = parse_gbnf(json_schema_to_gbnf(schema));
            for (int v = -40; v <= 150; ++v) {
                ASSERT_EQ(matches(g, std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << " value " << v;
            }
        }
    }
}

TEST(ToolCallGrammar, HermesCalls) {
    json tools = json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
         "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    ])");
    ToolCallGrammar tc = tool_call_grammar(tools);
    ASSERT_EQ(tc.trigger_words, std::vector<std::string>{"<tool_call>"});
    Grammar g = parse_gbnf(tc.gbnf);
    EXPECT_TRUE(matches(g, R"(<tool_call>{"name": "get_weather", "arguments": {"city": "Bath", "unit": "C"}}</tool_call>)"));
    EXPECT_TRUE(matches(g, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}</tool_call>"));
    EXPECT_FALSE(matches(g, R"(<tool_call>{"name": "get_weather", "arguments": {"unit": "C"}}</tool_call>)"));
    EXPECT_FALSE(matches(g, R"(<tool_call>{"name": "other", "arguments": {}}</tool_call>)"));
    EXPECT_FALSE(matches(g, R"(<tool_call>{"name": "now", "arguments": {}}</tool_call><tool_call>{"name": "now", "arguments": {}}</tool_call>)"));
    Grammar parallel = parse_gbnf(tool_call_grammar(tools, ToolCallFormat::Hermes, true).gbnf);
    EXPECT_TRUE(matches(parallel, R"(<tool_call>{"name": "now", "arguments": {}}</tool_call><tool_call>{"name": "now", "arguments": {}}</tool_call>)"));
    Grammar plain = parse_gbnf(tool_call_grammar(tools, ToolCallFormat::Json).gbnf);
    EXPECT_TRUE(matches(plain, R"({"name": "now", "arguments": {}})"));
    EXPECT_FALSE(matches(plain, R"(<tool_call>{"name": "now", "arguments": {}}</tool_call>)"));
    EXPECT_THROW(tool_call_grammar(json::array()), cria::Error);
    EXPECT_THROW(tool_call_grammar(json::parse(R"([{"type": "function", "function": {}}])")), cria::Error);
    EXPECT_THROW(tool_call_grammar(json::parse(R"([{"function": {"name": "f", "parameters": {"type": "object", "foo": 1}}}])")), cria::Error);
}

namespace {

// schema(1) = {"type": "string"}, schema(n) = {"type": "array", "items": schema(n-1)}.
json nested_schema(int levels) {
    std::string text;
    for (int i = 1; i < levels; ++i) text += R"({"type": "array", "items": )";
    text += R"({"type": "string"})" + std::string(levels - 1, '}');
    return json::parse(text);
}

TEST(JsonSchema, SchemasUpToTheDepthLimitConvertDeeperOnesAreRefused) {
    EXPECT_NO_THROW(json_schema_to_gbnf(nested_schema(64)));
    try {
        json_schema_to_gbnf(nested_schema(65));
        ADD_FAILURE() << "a schema deeper than the limit was converted";
    } catch (const cria::Error& e) {
        EXPECT_NE(std::string(e.what()).find("64 levels"), std::string::npos) << e.what();
    }
    EXPECT_THROW(json_schema_to_gbnf(nested_schema(4000)), cria::Error);  // was a stack overflow
}

}  // namespace
