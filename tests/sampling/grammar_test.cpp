// The grammar as a sampler of the chain: masks against the grammar module's
// own sampler, accept / reset / clone, lazy triggers (word, token, pattern),
// the chain's resampling, and grammar options -> sampler with its errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/grammar/json_schema.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/grammar.h"
#include "cria/sampling/samplers.h"
#include "support/test_paths.h"

namespace cria::sampling {
namespace {

const vocab::Vocab& austen() {
    static const vocab::Vocab v = vocab::Vocab::load(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    return v;
}

std::shared_ptr<const grammar::VocabIndex> austen_index() {
    static const auto index = grammar::VocabIndex::build(austen());
    return index;
}

std::unique_ptr<GrammarConstraint> from_gbnf(const std::string& gbnf, GrammarOptions options = {}) {
    options.grammar = gbnf;
    return make_grammar_sampler(austen_index(), options);
}

TokenId token(const std::string& text) {
    const TokenId id = austen_index()->find(text);
    EXPECT_NE(id, vocab::kNoToken) << "'" << text << "' is not one token of the austen vocabulary";
    return id;
}

// Which tokens survive apply() on a full row of random logits.
std::vector<bool> kept(Sampler& sampler, uint32_t seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> logits(austen().size());
    for (float& l : logits) l = normal(rng);
    Candidates c;
    c.fill(logits);
    sampler.apply(c);
    std::vector<bool> out(logits.size(), false);
    for (const Candidate& x : c) {
        out[static_cast<size_t>(x.id)] = !std::isinf(x.logit);
        if (!std::isinf(x.logit)) {
            EXPECT_EQ(x.logit, logits[static_cast<size_t>(x.id)]) << "a kept logit was changed";
        }
    }
    return out;
}

size_t count(const std::vector<bool>& v) { return static_cast<size_t>(std::count(v.begin(), v.end(), true)); }

// What the grammar module's sampler itself keeps after `accepted`.
std::vector<bool> reference_kept(const std::string& gbnf, const std::vector<TokenId>& accepted) {
    grammar::GrammarSampler ref(austen_index(), std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf)));
    for (TokenId t : accepted) ref.accept(t);
    std::vector<float> logits(austen().size(), 0.0f);
    ref.apply(std::span<float>(logits));
    std::vector<bool> out(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) out[i] = !std::isinf(logits[i]);
    return out;
}

const char* kYesNo = R"(root ::= "the " ("cat" | "house") "." )";

TEST(GrammarSampler, MasksAsTheGrammarModule) {
    auto g = from_gbnf(kYesNo);
    EXPECT_EQ(g->name(), "grammar");
    const auto first = kept(*g);
    EXPECT_EQ(first, reference_kept(kYesNo, {}));
    EXPECT_GT(count(first), 0u);
    EXPECT_LT(count(first), austen().size() / 10) << "the grammar barely constrains";
    EXPECT_TRUE(first[static_cast<size_t>(token("the"))]);
    EXPECT_FALSE(first[static_cast<size_t>(token(" the"))]);
    EXPECT_FALSE(first[static_cast<size_t>(austen().eos())]) << "end of text before the grammar can end";

    g->accept(token("the"));
    EXPECT_EQ(kept(*g), reference_kept(kYesNo, {token("the")}));
}

TEST(GrammarSampler, SmallListsAgreeWithFullRows) {
    // The chain probes one sampled token; that path must say what the full row says.
    auto g = from_gbnf(kYesNo);
    g->accept(token("the"));
    const auto full = kept(*g);
    for (TokenId id : {token(" cat"), token(" house"), token(" the"), token("c"), austen().eos(), TokenId{0}}) {
        Candidates one;
        const Candidate probe[1] = {Candidate{id, 0.5f, 0.0f}};
        one.assign(probe);
        g->apply(one);
        EXPECT_EQ(!std::isinf(one[0].logit), full[static_cast<size_t>(id)]) << "token " << id;
    }
    Candidates out_of_range;
    const Candidate bad[1] = {Candidate{static_cast<TokenId>(austen().size() + 5), 0.5f, 0.0f}};
    out_of_range.assign(bad);
    g->apply(out_of_range);
    EXPECT_TRUE(std::isinf(out_of_range[0].logit)) << "an id outside the vocabulary is never allowed";
}

TEST(GrammarSampler, EndOfTextOnlyWhereTheGrammarEnds) {
    auto g = from_gbnf(kYesNo);
    for (const char* piece : {"the", " cat", "."}) {
        EXPECT_FALSE(g->can_end());
        g->accept(token(piece));
    }
    EXPECT_TRUE(g->can_end());
    const auto k = kept(*g);
    EXPECT_TRUE(k[static_cast<size_t>(austen().eos())]);
    for (size_t i = 0; i < k.size(); ++i) {
        if (k[i]) {
            EXPECT_TRUE(austen().is_eog(static_cast<TokenId>(i))) << "only end of text may follow a finished sentence";
        }
    }
}

TEST(GrammarSampler, RejectedTokenThrowsAndLeavesTheStateAlone) {
    auto g = from_gbnf(kYesNo);
    g->accept(token("the"));
    const auto before = kept(*g);
    EXPECT_THROW(g->accept(token(" dog")), Error);
    EXPECT_THROW(g->accept(austen().eos()), Error);
    EXPECT_THROW(g->accept(-1), Error);
    EXPECT_EQ(kept(*g), before);
    // ... and a clone taken afterwards does not replay the rejected tokens.
    auto c = g->clone();
    EXPECT_EQ(kept(*c), before);
}

TEST(GrammarSampler, ResetStartsOver) {
    auto g = from_gbnf(kYesNo);
    const auto initial = kept(*g);
    g->accept(token("the"));
    g->accept(token(" cat"));
    EXPECT_NE(kept(*g), initial);
    g->reset();
    EXPECT_EQ(kept(*g), initial);
    g->accept(token("the"));  // usable again from the start
    EXPECT_NO_THROW(g->accept(token(" house")));
}

TEST(GrammarSampler, CloneCopiesTheStateAndIsIndependent) {
    auto g = from_gbnf(kYesNo);
    g->accept(token("the"));
    auto c = g->clone();
    EXPECT_EQ(c->name(), "grammar");
    EXPECT_EQ(kept(*c), kept(*g));
    c->accept(token(" cat"));
    EXPECT_NE(kept(*c), kept(*g)) << "advancing the clone moved the original";
    g->accept(token(" house"));  // the original still expects the noun
    EXPECT_THROW(c->accept(token(" house")), Error);
    // A clone of a reset sampler is at the start.
    g->reset();
    EXPECT_EQ(kept(*g->clone()), reference_kept(kYesNo, {}));
}

TEST(GrammarSampler, LazyWordTrigger) {
    GrammarOptions options;
    options.lazy = true;
    options.triggers.words = {"<call>"};
    auto g = from_gbnf(R"(root ::= "<call>" [0-9]+ "</call>")", options);
    EXPECT_FALSE(g->active());
    EXPECT_TRUE(g->can_end());
    EXPECT_EQ(count(kept(*g)), austen().size()) << "an inactive lazy grammar constrains nothing";
    for (const char* piece : {"I", " will", " call", " "}) g->accept(token(piece));
    EXPECT_FALSE(g->active());
    // The trigger arrives split over tokens; the grammar sees it from its start.
    const auto pieces = austen().tokenize("<call>", false, false);
    ASSERT_GT(pieces.size(), 1u);
    for (TokenId t : pieces) g->accept(t);
    EXPECT_TRUE(g->active());
    EXPECT_FALSE(g->can_end());
    const auto k = kept(*g);
    EXPECT_TRUE(k[static_cast<size_t>(token("1"))]);
    EXPECT_FALSE(k[static_cast<size_t>(token(" the"))]);
    EXPECT_THROW(g->accept(token(" the")), Error);

    auto c = g->clone();
    ASSERT_NE(dynamic_cast<GrammarConstraint*>(c.get()), nullptr);
    EXPECT_TRUE(static_cast<GrammarConstraint&>(*c).active());
    EXPECT_EQ(kept(*c), k);

    g->reset();
    EXPECT_FALSE(g->active()) << "reset makes a lazy grammar wait for its trigger again";
    EXPECT_EQ(count(kept(*g)), austen().size());
}

TEST(GrammarSampler, LazyTokenTrigger) {
    GrammarOptions options;
    options.lazy = true;
    const TokenId trigger = token(" Elizabeth");
    options.triggers.tokens = {trigger};
    auto g = from_gbnf(R"(root ::= " Elizabeth" (" said" | " smiled") ".")", options);
    g->accept(token(" Mr"));
    EXPECT_FALSE(g->active());
    g->accept(trigger);
    EXPECT_TRUE(g->active());
    const auto k = kept(*g);
    EXPECT_TRUE(k[static_cast<size_t>(token(" said"))]);
    EXPECT_FALSE(k[static_cast<size_t>(token(" was"))]);
}

TEST(GrammarSampler, LazyPatternStartsAtItsGroup) {
    GrammarOptions options;
    options.lazy = true;
    options.triggers.patterns = {"answer: (\\d)"};
    auto g = from_gbnf(R"(root ::= [0-9] [0-9] ".")", options);
    for (TokenId t : austen().tokenize("answer: ", false, false)) g->accept(t);
    EXPECT_FALSE(g->active());
    g->accept(token("4"));
    ASSERT_TRUE(g->active());
    // "4" was fed to the grammar: one digit and the dot are left.
    const auto k = kept(*g);
    EXPECT_TRUE(k[static_cast<size_t>(token("2"))]);
    EXPECT_FALSE(k[static_cast<size_t>(token("."))]);
}

// A tool call as the server builds it: the Hermes grammar of the tools, lazy
// on its trigger word. Prose first, then the call token by token, each one
// allowed by apply() before it is accepted.
TEST(GrammarSampler, LazyToolCall) {
    const auto tools = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "visit",
        "parameters": {"type": "object", "properties": {"town": {"type": "string"}}, "required": ["town"]}}}])");
    const grammar::ToolCallGrammar call = grammar::tool_call_grammar(tools);
    GrammarOptions options;
    options.grammar = call.gbnf;
    options.lazy = true;
    options.triggers.words = call.trigger_words;
    auto g = make_grammar_sampler(austen_index(), options);

    auto feed = [&](const std::string& text) {
        for (TokenId t : austen().tokenize(text, false, false)) {
            EXPECT_TRUE(kept(*g)[static_cast<size_t>(t)]) << "token '" << austen_index()->piece(t) << "' of '" << text << "'";
            g->accept(t);
        }
    };
    feed("I shall go to Bath. ");
    EXPECT_FALSE(g->active());
    feed("<tool_call>");
    EXPECT_TRUE(g->active());
    auto wrong_name = g->clone();
    feed("{\"name\": \"visit\", \"arguments\": {\"town\": \"Bath\"}}</tool_call>");
    EXPECT_TRUE(g->can_end());
    EXPECT_TRUE(kept(*g)[static_cast<size_t>(austen().eos())]);

    // Only the declared tool may be called.
    for (TokenId t : austen().tokenize("{\"name\": \"", false, false)) wrong_name->accept(t);
    EXPECT_FALSE(kept(*wrong_name)[static_cast<size_t>(token("d"))]) << "a call of an undeclared tool 'd...'";
}

TEST(GrammarSampler, ChainResamplesOnlyWhenTheTokenIsRejected) {
    Chain chain;
    chain.add(make_greedy());
    chain.set_grammar(from_gbnf(kYesNo));
    std::vector<float> logits(austen().size(), 0.0f);
    logits[static_cast<size_t>(token(" the"))] = 10.0f;  // best, but forbidden
    logits[static_cast<size_t>(token("the"))] = 5.0f;
    EXPECT_EQ(chain.sample(logits), token("the"));
    chain.accept(token("the"));
    logits[static_cast<size_t>(token(" house"))] = 20.0f;  // best and allowed
    EXPECT_EQ(chain.sample(logits), token(" house"));
    chain.accept(token(" house"));
    EXPECT_EQ(chain.sample(logits), token("."));  // the only text left, though its logit is 0
    chain.accept(token("."));
    EXPECT_EQ(chain.sample(logits, /*grammar_first=*/true), austen().eos());

    // The chain's copy carries the grammar state; reset brings it back to the start.
    Chain copy = chain.copy();
    EXPECT_EQ(copy.sample(logits), austen().eos());
    chain.reset();
    EXPECT_EQ(chain.sample(logits), token("the"));
}

// Prompt tokens go to the samplers' history but never to the grammar: a
// prompt the grammar would reject must not stop generation.
TEST(GrammarSampler, PromptTokensBypassTheGrammar) {
    Chain chain;
    chain.add(make_greedy());
    chain.set_grammar(from_gbnf(kYesNo));
    EXPECT_THROW(chain.copy().accept(token(" house")), Error);  // not allowed as output
    for (const char* piece : {" house", ".", " the"}) chain.accept_prompt(token(piece));
    std::vector<float> logits(austen().size(), 0.0f);
    logits[static_cast<size_t>(token(" house"))] = 10.0f;  // best, but the grammar is at its start
    logits[static_cast<size_t>(token("the"))] = 5.0f;
    EXPECT_EQ(chain.sample(logits), token("the"));
}

// --- options -> sampler --------------------------------------------------------

std::filesystem::path write_file(const std::string& name, const std::string& text) {
    const auto path = test::temp_dir() / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::string error_of(const GrammarOptions& options) {
    try {
        make_grammar_sampler(austen(), options);
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

TEST(GrammarOptions, NoSourceNoSampler) {
    GrammarOptions options;
    EXPECT_TRUE(options.empty());
    EXPECT_EQ(make_grammar_sampler(austen(), options), nullptr);
    EXPECT_EQ(grammar_source(options), "");
}

TEST(GrammarOptions, EverySourceGivesTheSameConstraint) {
    const std::string schema = R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})";
    const std::string gbnf = grammar::json_schema_to_gbnf(nlohmann::json::parse(schema));

    GrammarOptions text, file, schema_text, schema_file;
    text.grammar = gbnf;
    file.grammar_file = write_file("g.gbnf", gbnf).string();
    schema_text.json_schema = schema;
    schema_file.json_schema_file = write_file("s.json", schema).string();
    EXPECT_EQ(grammar_source(file), gbnf);
    EXPECT_EQ(grammar_source(schema_text), gbnf);

    const auto expected = reference_kept(gbnf, {token("{")});
    for (const GrammarOptions* o : {&text, &file, &schema_text, &schema_file}) {
        auto g = make_grammar_sampler(austen(), *o);
        ASSERT_NE(g, nullptr);
        g->accept(token("{"));
        EXPECT_EQ(kept(*g), expected);
    }
}

TEST(GrammarOptions, RootRuleIsHonouredForGbnf) {
    GrammarOptions options;
    options.grammar = "root ::= \"a\"\nsentence ::= \"the\" \" cat\"";
    options.root_rule = "sentence";
    auto g = make_grammar_sampler(austen(), options);
    EXPECT_TRUE(kept(*g)[static_cast<size_t>(token("the"))]);
    options.root_rule = "missing";
    EXPECT_NE(error_of(options).find("missing"), std::string::npos) << error_of(options);
}

TEST(GrammarOptions, ClearErrors) {
    auto expect_error = [](const GrammarOptions& o, const std::vector<std::string>& parts) {
        const std::string message = error_of(o);
        for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' lacks '" << part << "'";
    };
    GrammarOptions two;
    two.grammar = "root ::= \"a\"";
    two.json_schema = "{}";
    expect_error(two, {"only one of", "--grammar", "--json-schema"});

    GrammarOptions missing;
    missing.grammar_file = (test::temp_dir() / "no-such.gbnf").string();
    expect_error(missing, {"grammar file", "no-such.gbnf", "cannot be read"});

    GrammarOptions empty;
    empty.grammar_file = write_file("empty.gbnf", " \n").string();
    expect_error(empty, {"empty.gbnf", "is empty"});

    GrammarOptions syntax;
    syntax.grammar = "root ::= \"a\"\nitem ::= [a-z";
    expect_error(syntax, {"--grammar", "line 2"});

    GrammarOptions syntax_file;
    syntax_file.grammar_file = write_file("bad.gbnf", "root ::= undefined-rule\n").string();
    expect_error(syntax_file, {"bad.gbnf", "undefined-rule"});

    GrammarOptions not_json;
    not_json.json_schema = "{\"type\": ";
    expect_error(not_json, {"--json-schema", "not valid JSON"});

    GrammarOptions unsupported;
    unsupported.json_schema = R"({"type": "string", "contentEncoding": "base64"})";
    expect_error(unsupported, {"--json-schema", "contentEncoding"});

    GrammarOptions schema_file;
    schema_file.json_schema_file = write_file("bad.json", "[1, 2").string();
    expect_error(schema_file, {"bad.json", "not valid JSON"});

    GrammarOptions lazy;
    lazy.grammar = "root ::= \"a\"";
    lazy.lazy = true;
    expect_error(lazy, {"trigger"});

    GrammarOptions bad_token = lazy;
    bad_token.triggers.tokens = {static_cast<TokenId>(austen().size())};
    expect_error(bad_token, {"trigger token", "vocabulary"});

    GrammarOptions bad_pattern = lazy;
    bad_pattern.triggers.patterns = {"(unclosed"};
    expect_error(bad_pattern, {"pattern", "(unclosed"});
}

}  // namespace
}  // namespace cria::sampling
