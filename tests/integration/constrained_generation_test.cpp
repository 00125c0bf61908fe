// Grammar-constrained generation on a real model (austen-7m, a tiny llama
// trained on Jane Austen, which has never seen JSON): whatever it would like
// to say, the output must be a document of the schema or grammar. Checked by
// parsing it with nlohmann::json and testing each schema rule by hand, at
// several temperatures and seeds. Plus a lazy grammar: free prose until a
// trigger word, then constrained.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/sampling/grammar.h"
#include "cria/sampling/params.h"
#include "support/test_paths.h"

namespace cria {
namespace {

using nlohmann::json;
using vocab::TokenId;

// Generation is capped: every grammar below is finite or ends quickly, so a
// document that needs more tokens than this means the constraint let the
// model wander (a failure, not a reason to raise the cap).
constexpr int kMaxTokens = 160;

struct Austen {
    std::unique_ptr<model::Model> model;
    std::unique_ptr<vocab::Vocab> vocab_storage;
    const vocab::Vocab& vocab() const { return *vocab_storage; }
    std::shared_ptr<const grammar::VocabIndex> index;
    std::unique_ptr<runtime::Context> ctx;
    std::vector<TokenId> padding_tokens;  // whitespace-only tokens but " "
};

Austen& austen() {
    static Austen a = [] {
        Austen x;
        x.model = model::Model::load(test::model_path("austen-7m/austen-7m-f32.gguf").string());
        x.vocab_storage = std::make_unique<vocab::Vocab>(vocab::Vocab::from_gguf(x.model->file()));
        x.index = grammar::VocabIndex::build(x.vocab());
        for (size_t i = 0; i < x.index->size(); ++i) {
            const std::string& piece = x.index->piece(static_cast<TokenId>(i));
            if (!piece.empty() && piece != " " && piece.find_first_not_of(" \t\r\n") == std::string::npos) {
                x.padding_tokens.push_back(static_cast<TokenId>(i));
            }
        }
        runtime::ContextParams cp;
        cp.n_ctx = 256;
        cp.n_threads = 2;
        cp.type_k = cp.type_v = ElementType::F32;
        x.ctx = std::make_unique<runtime::Context>(*x.model, cp);
        return x;
    }();
    return a;
}

struct Output {
    std::string text;
    bool ended = false;  // the model chose end of text (only allowed where the grammar can end)
};

// The generation loop of cria run, except that prompt tokens stay out of the
// grammar (llama.cpp accepts them with accept_grammar = false).
Output generate(const std::string& prompt, const sampling::GrammarOptions& options, float temp, uint32_t seed,
                int max_tokens = kMaxTokens) {
    Austen& a = austen();
    sampling::SamplingParams sp;  // llama.cpp's defaults otherwise (top-k 40, top-p 0.95, min-p 0.05)
    sp.temp = temp;
    sp.seed = seed;
    // The model has never seen JSON and pads: every whitespace slot of the
    // schema grammars allows a newline and 20 spaces or tabs, and it takes
    // them all, so a document would need hundreds of tokens. Whitespace
    // tokens other than a single space are banned (as a user would with
    // --logit-bias) to keep runs short; the grammar decides everything else.
    for (TokenId id : a.padding_tokens) sp.logit_bias.push_back({id, -INFINITY});
    sampling::ChainContext cc;
    cc.vocab = &a.vocab();
    cc.n_ctx = static_cast<int32_t>(a.ctx->n_ctx());
    sampling::Chain chain = sampling::build_chain(sp, cc);
    chain.set_grammar(sampling::make_grammar_sampler(a.index, options));

    const auto tokens = a.vocab().tokenize(prompt, true, false);
    a.ctx->memory_clear();
    if (a.ctx->decode(runtime::Batch::from_tokens(tokens, 0)) != 0) throw Error("no room for the prompt");
    auto pos = static_cast<int32_t>(tokens.size());
    Output out;
    for (int i = 0; i < max_tokens; ++i) {
        const TokenId t = chain.sample(a.ctx->logits(-1));
        chain.accept(t);  // throws if the grammar did not allow t
        if (a.vocab().is_eog(t)) {
            out.ended = true;
            break;
        }
        out.text += a.vocab().token_to_piece(t, false);
        runtime::Batch b;
        b.add(t, pos++, {0}, true);
        if (a.ctx->decode(b) != 0) throw Error("context full");
    }
    return out;
}

bool is_int_in(const json& v, int64_t lo, int64_t hi) {
    return v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
}

bool is_short_string(const json& v, size_t max_chars) {
    if (!v.is_string()) return false;
    size_t chars = 0;  // code points
    for (unsigned char c : v.get<std::string>()) chars += (c & 0xC0) != 0x80;
    return chars <= max_chars;
}

// Only the listed keys, and all the required ones.
::testing::AssertionResult has_keys(const json& v, const std::vector<std::string>& allowed, const std::vector<std::string>& required) {
    if (!v.is_object()) return ::testing::AssertionFailure() << "not an object";
    for (const auto& r : required) {
        if (!v.contains(r)) return ::testing::AssertionFailure() << "required '" << r << "' missing";
    }
    for (const auto& [key, _] : v.items()) {
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) return ::testing::AssertionFailure() << "extra key '" << key << "'";
    }
    return ::testing::AssertionSuccess();
}

struct SchemaCase {
    const char* name;
    const char* schema;
    // Checks the parsed document against the schema's rules (not via the grammar).
    std::function<::testing::AssertionResult(const json&)> valid;
};

::testing::AssertionResult check(bool ok, const char* what) {
    return ok ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << what;
}

const std::vector<SchemaCase>& schema_cases() {
    static const std::vector<SchemaCase> cases = {
        {"RequiredProperties",
         R"({"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 12},
                "age": {"type": "integer", "minimum": 16, "maximum": 60},
                "married": {"type": "boolean"}},
             "required": ["name", "age"], "additionalProperties": false})",
         [](const json& v) {
             auto keys = has_keys(v, {"name", "age", "married"}, {"name", "age"});
             if (!keys) return keys;
             if (!is_short_string(v["name"], 12)) return check(false, "name: string of at most 12 characters");
             if (!is_int_in(v["age"], 16, 60)) return check(false, "age: integer in [16, 60]");
             return check(!v.contains("married") || v["married"].is_boolean(), "married: boolean");
         }},
        {"Enum",
         R"({"enum": ["Elizabeth", "Darcy", "Mr. Bennet", 42, null]})",
         [](const json& v) {
             return check(v == "Elizabeth" || v == "Darcy" || v == "Mr. Bennet" || v == 42 || v.is_null(), "not one of the enum values");
         }},
        {"ArrayMinMaxItems",
         R"({"type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 5}, "minItems": 2, "maxItems": 4})",
         [](const json& v) {
             if (!v.is_array() || v.size() < 2 || v.size() > 4) return check(false, "array of 2 to 4 items");
             for (const auto& x : v) {
                 if (!is_int_in(x, -5, 5)) return check(false, "item: integer in [-5, 5]");
             }
             return check(true, "");
         }},
        {"IntegerRange",
         R"({"type": "integer", "minimum": 17, "maximum": 1811})",
         [](const json& v) { return check(is_int_in(v, 17, 1811), "integer in [17, 1811]"); }},
        {"NestedRef",
         R"({"type": "object",
             "properties": {"home": {"$ref": "#/$defs/place"}, "visits": {"type": "array", "items": {"$ref": "#/$defs/place"}, "maxItems": 2}},
             "required": ["home"],
             "$defs": {"place": {"type": "object",
                                 "properties": {"town": {"type": "string", "maxLength": 10}, "miles": {"$ref": "#/$defs/miles"}},
                                 "required": ["town", "miles"], "additionalProperties": false},
                       "miles": {"type": "integer", "minimum": 0, "maximum": 200}}})",
         [](const json& v) {
             auto place = [](const json& p) {
                 auto keys = has_keys(p, {"town", "miles"}, {"town", "miles"});
                 if (!keys) return keys;
                 return check(is_short_string(p["town"], 10) && is_int_in(p["miles"], 0, 200), "place: town <= 10 chars, miles in [0, 200]");
             };
             auto keys = has_keys(v, {"home", "visits"}, {"home"});
             if (!keys) return keys;
             if (auto r = place(v["home"]); !r) return r;
             if (!v.contains("visits")) return check(true, "");
             if (!v["visits"].is_array() || v["visits"].size() > 2) return check(false, "visits: at most 2");
             for (const auto& p : v["visits"]) {
                 if (auto r = place(p); !r) return r;
             }
             return check(true, "");
         }},
        {"StringPattern",
         R"({"type": "string", "pattern": "^[A-Z][a-z]{2,8} (of|at) [A-Z][a-z]{2,9} [0-9]{2}$"})",
         [](const json& v) {
             static const std::regex re("[A-Z][a-z]{2,8} (of|at) [A-Z][a-z]{2,9} [0-9]{2}");
             return check(v.is_string() && std::regex_match(v.get<std::string>(), re), "does not match the pattern");
         }},
    };
    return cases;
}

const char* kPrompt = "It is a truth universally acknowledged";

struct Param {
    size_t schema;
    float temp;
};

class SchemaGeneration : public ::testing::TestWithParam<Param> {};

TEST_P(SchemaGeneration, OutputIsAValidDocument) {
    const SchemaCase& c = schema_cases()[GetParam().schema];
    sampling::GrammarOptions options;
    options.json_schema = c.schema;
    // Greedy is deterministic: one run. Sampling: a few seeds.
    const std::vector<uint32_t> seeds = GetParam().temp == 0.0f ? std::vector<uint32_t>{1} : std::vector<uint32_t>{1, 2};
    for (uint32_t seed : seeds) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const Output out = generate(kPrompt, options, GetParam().temp, seed);
        ASSERT_TRUE(out.ended) << "no end of text within " << kMaxTokens << " tokens: " << out.text;
        json doc;
        ASSERT_NO_THROW(doc = json::parse(out.text)) << out.text;
        EXPECT_TRUE(c.valid(doc)) << out.text;
    }
}

std::vector<Param> all_params() {
    std::vector<Param> out;
    for (size_t s = 0; s < schema_cases().size(); ++s) {
        for (float t : {0.0f, 0.7f, 1.0f, 1.5f}) out.push_back({s, t});
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Austen, SchemaGeneration, ::testing::ValuesIn(all_params()), [](const auto& info) {
    const int t10 = static_cast<int>(info.param.temp * 10.0f + 0.5f);
    return std::string(schema_cases()[info.param.schema].name) + "_temp" + std::to_string(t10 / 10) + "_" + std::to_string(t10 % 10);
});

// Where nlohmann's parser gives up on `text`: text.size() or more when the
// text is a valid beginning of a JSON document (only the end is missing).
size_t json_error_position(const std::string& text) {
    struct Sax : nlohmann::json_sax<json> {
        size_t error_at = std::string::npos;
        bool null() override { return true; }
        bool boolean(bool) override { return true; }
        bool number_integer(number_integer_t) override { return true; }
        bool number_unsigned(number_unsigned_t) override { return true; }
        bool number_float(number_float_t, const string_t&) override { return true; }
        bool string(string_t&) override { return true; }
        bool binary(binary_t&) override { return true; }
        bool start_object(std::size_t) override { return true; }
        bool key(string_t&) override { return true; }
        bool end_object() override { return true; }
        bool start_array(std::size_t) override { return true; }
        bool end_array() override { return true; }
        bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
            error_at = position;
            return false;
        }
    } sax;
    json::sax_parse(text, &sax);
    return sax.error_at;
}

// json.gbnf is open-ended (strings of any length), and the model likes to
// write Austen inside them: a run that hits the cap must still be a valid
// beginning of a JSON object; runs that end must parse. Prompted with a few
// objects, some runs do close their documents (at least one must).
TEST(JsonGrammarGeneration, OutputIsJsonOrAValidBeginning) {
    constexpr int kJsonMaxTokens = 96;
    sampling::GrammarOptions options;
    options.grammar_file = test::data_path("grammars/json.gbnf").string();
    const char* prompt = "Elizabeth wrote: {\"name\": \"Jane\", \"age\": 22} and {\"name\": \"Kitty\", \"age\": 17} and ";
    int ended = 0;
    for (float temp : {0.0f, 0.7f, 1.0f, 1.5f}) {
        for (uint32_t seed : {7u, 8u}) {
            if (temp == 0.0f && seed != 7u) continue;  // greedy: one run
            SCOPED_TRACE("temp " + std::to_string(temp) + ", seed " + std::to_string(seed));
            const Output out = generate(prompt, options, temp, seed, kJsonMaxTokens);
            ASSERT_FALSE(out.text.empty());
            EXPECT_EQ(out.text[0], '{') << "json.gbnf's root is an object: " << out.text;
            if (out.ended) {
                ++ended;
                json doc;
                ASSERT_NO_THROW(doc = json::parse(out.text)) << out.text;
                EXPECT_TRUE(doc.is_object()) << out.text;
            } else {
                EXPECT_GE(json_error_position(out.text), out.text.size()) << "not a valid beginning of JSON: " << out.text;
            }
        }
    }
    EXPECT_GE(ended, 1) << "no run closed its document";
    RecordProperty("ended", ended);
}

// Free prose until the model writes " the", then a fixed little phrase.
TEST(LazyGrammarGeneration, FreeTextUntilTheTriggerThenConstrained) {
    sampling::GrammarOptions options;
    // A word trigger fires inside longer words too (" their"), as in
    // llama.cpp, so the grammar allows the rest of such a word.
    options.grammar = R"(root ::= " the" [a-z]{0,6} (" house" | " garden" | " park") " at" " " [A-Z] [a-z]{2,9} ".")";
    options.lazy = true;
    options.triggers.words = {" the"};
    const std::regex tail(" the[a-z]{0,6}( house| garden| park) at [A-Z][a-z]{2,9}\\.");
    for (float temp : {0.0f, 0.7f, 1.0f}) {
        for (uint32_t seed : {1u, 2u}) {
            SCOPED_TRACE("temp " + std::to_string(temp) + ", seed " + std::to_string(seed));
            const Output out = generate(kPrompt, options, temp, seed);
            const size_t at = out.text.find(" the");
            ASSERT_NE(at, std::string::npos) << "the trigger never came: " << out.text;
            EXPECT_TRUE(out.ended) << out.text;
            EXPECT_TRUE(std::regex_match(out.text.substr(at), tail)) << out.text;
            // Before the trigger the model wrote what it liked (the grammar
            // alone could not have produced it).
            EXPECT_GT(at, 0u) << out.text;
        }
    }
}

}  // namespace
}  // namespace cria
