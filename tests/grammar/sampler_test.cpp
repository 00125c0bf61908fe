// The grammar sampler over real vocabularies: its token masks against a
// token-by-token reference, multi-char tokens, partial UTF-8, EOS, lazy
// triggers, token references, and random generation under the JSON grammar.

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/grammar/sampler.h"
#include "support/test_paths.h"

using namespace cria::grammar;
using cria::vocab::TokenId;
using cria::vocab::Vocab;

namespace {

const Vocab& austen() {
    static const Vocab v = Vocab::load(cria::test::model_path("austen-7m/austen-7m-f32.gguf").string());
    return v;
}
const Vocab& stories() {
    static const Vocab v = Vocab::load(cria::test::model_path("stories260K/stories260K.gguf").string());
    return v;
}

std::string read_grammar(const std::string& name) {
    std::ifstream in(cria::test::data_path("grammars/" + name + ".gbnf"), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Which tokens apply() keeps, over the whole vocabulary.
std::vector<bool> kept(GrammarSampler& sampler, size_t n) {
    std::vector<float> logits(n, 0.0f);
    sampler.apply(std::span<float>(logits));
    std::vector<bool> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = !std::isinf(logits[i]);
    return out;
}

// Reference: feed each token's text byte by byte to a fresh automaton in
// the same position (`prefix`), no trie, no caches.
std::vector<bool> reference(const Vocab& vocab, const std::string& gbnf, const std::string& prefix) {
    auto index = VocabIndex::build(vocab);
    Automaton a(std::make_shared<const Grammar>(parse_gbnf(gbnf)));
    StateId s = a.step(a.initial(), prefix);
    std::vector<bool> out(vocab.size());
    for (size_t i = 0; i < vocab.size(); ++i) {
        auto id = static_cast<TokenId>(i);
        if (index->is_eog(id)) out[i] = a.can_end(s);
        else out[i] = !index->piece(id).empty() && a.step(s, index->piece(id)) != kDeadState;
    }
    return out;
}

// Parses with nlohmann::json. A number too large for a double (the JSON
// grammar allows 16-digit exponents) is valid JSON that nlohmann refuses
// with out_of_range 406 after lexing it correctly; that counts as valid.
bool is_valid_json(const std::string& text) {
    try {
        (void)nlohmann::json::parse(text);
        return true;
    } catch (const nlohmann::json::out_of_range& e) {
        return e.id == 406;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

// Drives the sampler along `text` by tokenizing it.
void accept_text(const Vocab& vocab, GrammarSampler& sampler, const std::string& text) {
    for (TokenId t : vocab.tokenize(text, false, false)) sampler.accept(t);
}

}  // namespace

TEST(GrammarSampler, MasksMatchReferenceOnBothVocabs) {
    struct Case { std::string gbnf, prefix; };
    const std::vector<Case> cases = {
        {read_grammar("json"), ""},
        {read_grammar("json"), "{\"name\": \"Eliz"},
        {read_grammar("json"), "{\"a\": [1, 2"},
        {read_grammar("arithmetic"), "x+"},
        {read_grammar("chess"), "1. e4 e5\n"},
        {read_grammar("english"), "Hello "},
        {read_grammar("japanese"), "\xE3\x81"},  // inside a character
        {read_grammar("list"), "- a\n"},
        {"root ::= \"the lady\" [ a-z]* | \"th\" [0-9]", "th"},
    };
    for (const Vocab* vocab : {&austen(), &stories()}) {
        for (const Case& c : cases) {
            GrammarSampler sampler(*vocab, c.gbnf);
            // Reach the prefix byte by byte (it may end inside a character).
            auto index = VocabIndex::build(*vocab);
            for (char ch : c.prefix) {
                TokenId t = index->find(std::string(1, ch));
                ASSERT_GE(t, 0);
                sampler.accept(t);
            }
            std::vector<bool> got = kept(sampler, vocab->size());
            std::vector<bool> want = reference(*vocab, c.gbnf, c.prefix);
            size_t n_kept = 0;
            for (size_t i = 0; i < got.size(); ++i) {
                n_kept += got[i];
                ASSERT_EQ(got[i], want[i]) << "token " << i << " '" << vocab->token_to_piece(static_cast<TokenId>(i)) << "' prefix '"
                                           << c.prefix << "' vocab " << vocab->model();
            }
            EXPECT_GT(n_kept, 0u) << c.prefix;
        }
    }
}

TEST(GrammarSampler, MultiCharTokensSpanElements) {
    auto index = VocabIndex::build(austen());
    GrammarSampler sampler(austen(), "root ::= \"th\" \"e\" [ ] [a-z]+");
    TokenId the = index->find("the"), th = index->find("th"), t = index->find("t"), a = index->find("a");
    ASSERT_GE(the, 0);
    ASSERT_GE(th, 0);
    EXPECT_TRUE(sampler.allows(the));  // one token over two literals
    EXPECT_TRUE(sampler.allows(th));
    EXPECT_TRUE(sampler.allows(t));
    EXPECT_FALSE(sampler.allows(a));
    sampler.accept(the);
    TokenId space_lady = index->find(" lady");
    ASSERT_GE(space_lady, 0);
    EXPECT_TRUE(sampler.allows(space_lady));  // spans the class [ ] and [a-z]+
    EXPECT_FALSE(sampler.allows(index->find(" ")) == false);
    EXPECT_FALSE(sampler.allows(index->find("e")));
    sampler.accept(space_lady);
    EXPECT_TRUE(sampler.can_end());
    EXPECT_THROW(sampler.accept(index->find("9")), cria::Error);
}

TEST(GrammarSampler, PartialUtf8AcrossByteTokens) {
    // stories260K spells characters it lacks with byte tokens <0xE3> ...: 3 + byte.
    const Vocab& v = stories();
    auto byte = [](unsigned b) { return static_cast<TokenId>(3 + b); };
    GrammarSampler sampler(v, "root ::= \"\xE3\x81\x93\" \"!\"");  // こ!
    EXPECT_TRUE(sampler.allows(byte(0xE3)));
    EXPECT_FALSE(sampler.allows(byte(0xE4)));
    EXPECT_FALSE(sampler.allows(byte(0x81)));  // a continuation byte cannot start
    EXPECT_FALSE(sampler.allows(v.eos()));
    sampler.accept(byte(0xE3));
    EXPECT_TRUE(sampler.allows(byte(0x81)));
    EXPECT_FALSE(sampler.allows(byte(0x82)));
    EXPECT_FALSE(sampler.allows(byte(0x41)));
    EXPECT_FALSE(sampler.allows(v.eos()));  // never inside a character
    sampler.accept(byte(0x81));
    EXPECT_TRUE(sampler.allows(byte(0x93)));
    EXPECT_FALSE(sampler.allows(byte(0x94)));
    sampler.accept(byte(0x93));
    EXPECT_FALSE(sampler.allows(v.eos()));
    EXPECT_TRUE(sampler.allows(byte('!')));
    sampler.accept(byte('!'));
    EXPECT_TRUE(sampler.allows(v.eos()));
    EXPECT_FALSE(sampler.allows(byte('!')));
}

TEST(GrammarSampler, PartialUtf8PrunedByClass) {
    // Only hiragana: lead byte E3 can start one, E4 (CJK) cannot, and after
    // E3 only the continuation bytes that stay in U+3041..U+309F remain.
    const Vocab& v = austen();  // byte-level: ids 0..255 hold the single bytes
    auto index = VocabIndex::build(v);
    GrammarSampler sampler(v, "root ::= [ぁ-ゟ]+");
    std::string e3(1, '\xE3'), e4(1, '\xE4'), x81(1, '\x81'), x82(1, '\x82'), x83(1, '\x83');
    ASSERT_GE(index->find(e3), 0);
    EXPECT_TRUE(sampler.allows(index->find(e3)));
    EXPECT_FALSE(sampler.allows(index->find(e4)));
    sampler.accept(index->find(e3));
    EXPECT_TRUE(sampler.allows(index->find(x81)));   // U+3040..U+307F
    EXPECT_TRUE(sampler.allows(index->find(x82)));   // U+3080..U+30BF (U+3080..U+309F)
    EXPECT_FALSE(sampler.allows(index->find(x83)));  // U+30C0.. katakana
}

TEST(GrammarSampler, EndOfGenerationOnlyWhereGrammarEnds) {
    const Vocab& v = austen();
    auto index = VocabIndex::build(v);
    GrammarSampler sampler(v, "root ::= [0-9]+ (\".\" [0-9]+)?");
    EXPECT_FALSE(sampler.allows(v.eos()));
    sampler.accept(index->find("4"));
    EXPECT_TRUE(sampler.allows(v.eos()));
    for (size_t i = 0; i < v.size(); ++i) {
        if (v.is_eog(static_cast<TokenId>(i))) EXPECT_TRUE(sampler.allows(static_cast<TokenId>(i)));
    }
    sampler.accept(index->find("."));
    EXPECT_FALSE(sampler.allows(v.eos()));
    EXPECT_THROW(sampler.accept(v.eos()), cria::Error);
    sampler.accept(index->find("5"));
    EXPECT_NO_THROW(sampler.accept(v.eos()));
}

TEST(GrammarSampler, CandidatesApi) {
    const Vocab& v = austen();
    auto index = VocabIndex::build(v);
    GrammarSampler sampler(v, "root ::= \"yes\" | \"no\"");
    std::vector<Candidate> c = {{index->find("y"), 1.0f}, {index->find("n"), 2.0f}, {index->find("x"), 3.0f}, {-5, 1.0f}, {99999, 1.0f}};
    sampler.apply(std::span<Candidate>(c));
    EXPECT_EQ(c[0].logit, 1.0f);
    EXPECT_EQ(c[1].logit, 2.0f);
    EXPECT_TRUE(std::isinf(c[2].logit));
    EXPECT_TRUE(std::isinf(c[3].logit));
    EXPECT_TRUE(std::isinf(c[4].logit));
}

TEST(GrammarSampler, TokenReferences) {
    const Vocab& v = stories();
    // <[id]>: exactly that token; !<[id]>: any single token but that one.
    GrammarSampler sampler(v, "root ::= <[100]> !<[101]> \"b\"");
    EXPECT_TRUE(sampler.allows(100));
    EXPECT_FALSE(sampler.allows(101));
    sampler.accept(100);
    EXPECT_FALSE(sampler.allows(101));
    EXPECT_TRUE(sampler.allows(102));
    EXPECT_TRUE(sampler.allows(300));
    sampler.accept(300);
    EXPECT_TRUE(sampler.allows(101));  // "b" as text now
    EXPECT_FALSE(sampler.allows(102));
    // <text> resolves through the vocabulary.
    GrammarSampler named(v, "root ::= </s> | \"x\"");
    EXPECT_TRUE(named.allows(2));
    EXPECT_THROW(GrammarSampler(v, "root ::= <not-a-token>"), cria::Error);
    EXPECT_THROW(GrammarSampler(v, "root ::= <[100000]>"), cria::Error);
}

TEST(GrammarSampler, LazyTriggerWord) {
    const Vocab& v = austen();
    SamplerOptions opt;
    opt.lazy = true;
    opt.triggers.words = {"<tool_call>"};
    GrammarSampler sampler(v, "root ::= \"<tool_call>\" [0-9]+ \"</tool_call>\"", opt);
    EXPECT_FALSE(sampler.active());
    std::vector<float> logits(v.size(), 0.0f);
    sampler.apply(std::span<float>(logits));
    for (float l : logits) ASSERT_FALSE(std::isinf(l));  // no constraint yet
    accept_text(v, sampler, "Let me check. <tool_");
    EXPECT_FALSE(sampler.active());
    accept_text(v, sampler, "call>12");
    EXPECT_TRUE(sampler.active());
    auto index = VocabIndex::build(v);
    EXPECT_TRUE(sampler.allows(index->find("3")));
    EXPECT_FALSE(sampler.allows(index->find("a")));
    EXPECT_TRUE(sampler.allows(index->find("<")));
    sampler.reset();
    EXPECT_FALSE(sampler.active());
}

TEST(GrammarSampler, LazyTriggerToken) {
    const Vocab& v = stories();
    SamplerOptions opt;
    opt.lazy = true;
    opt.triggers.tokens = {126};  // "{" as a byte token
    GrammarSampler sampler(v, "root ::= \"{\" [a-z]* \"}\"", opt);
    sampler.accept(100);
    EXPECT_FALSE(sampler.active());
    sampler.accept(126);
    EXPECT_TRUE(sampler.active());
    EXPECT_FALSE(sampler.allows(126));
    EXPECT_TRUE(sampler.allows(128));  // "}"
}

TEST(GrammarSampler, LazyTriggerPatterns) {
    const Vocab& v = austen();
    auto index = VocabIndex::build(v);
    {
        SamplerOptions opt;
        opt.lazy = true;
        opt.triggers.patterns = {"call:\\s*(\\[)"};  // the grammar starts at the group
        GrammarSampler sampler(v, "root ::= \"[\" [0-9,]* \"]\"", opt);
        accept_text(v, sampler, "I will call: ");
        EXPECT_FALSE(sampler.active());
        accept_text(v, sampler, "[1,");
        EXPECT_TRUE(sampler.active());
        EXPECT_TRUE(sampler.allows(index->find("2")));
        EXPECT_FALSE(sampler.allows(index->find("a")));
    }
    {
        SamplerOptions opt;
        opt.lazy = true;
        opt.triggers.full_patterns = {"\\s*(\\{)[\\s\\S]*"};  // the whole output so far must match
        GrammarSampler sampler(v, "root ::= \"{\" [a-z]* \"}\"", opt);
        accept_text(v, sampler, "x {");
        EXPECT_FALSE(sampler.active());  // "x" before: no full match
        GrammarSampler other(v, "root ::= \"{\" [a-z]* \"}\"", opt);
        accept_text(v, other, "  {ab");
        EXPECT_TRUE(other.active());
        EXPECT_TRUE(other.allows(index->find("}")));
    }
    SamplerOptions bad;
    bad.lazy = true;
    EXPECT_THROW(GrammarSampler(v, "root ::= \"x\"", bad), cria::Error);  // no trigger
    bad.triggers.patterns = {"(unclosed"};
    EXPECT_THROW(GrammarSampler(v, "root ::= \"x\"", bad), cria::Error);
}

TEST(GrammarSampler, LazyTriggerTextMustParse) {
    SamplerOptions opt;
    opt.lazy = true;
    opt.triggers.words = {"<a>"};
    GrammarSampler sampler(austen(), "root ::= \"<b>\"", opt);
    EXPECT_THROW(accept_text(austen(), sampler, "<a>"), cria::Error);
}

// Random logits, constrained by the JSON grammar: every run must end in a
// JSON document. After a budget of steps the "sampler" prefers tokens that
// close things, so each run ends.
TEST(GrammarSampler, RandomGenerationYieldsValidJson) {
    for (const Vocab* vocab : {&austen(), &stories()}) {
        auto index = VocabIndex::build(*vocab);
        auto grammar = std::make_shared<const Grammar>(parse_gbnf(read_grammar("json")));
        const std::vector<std::string> closers = {"\"", "}", "]", ":", "0"};
        for (uint32_t seed = 1; seed <= 40; ++seed) {
            GrammarSampler sampler(index, grammar);
            std::mt19937 rng(seed);
            std::normal_distribution<float> noise(0.0f, 1.0f);
            std::string text;
            std::vector<float> logits(vocab->size());
            bool ended = false;
            for (int step = 0; step < 400 && !ended; ++step) {
                for (float& l : logits) l = noise(rng);
                sampler.apply(std::span<float>(logits));
                TokenId pick = -1;
                if (step > 60) {
                    if (!std::isinf(logits[static_cast<size_t>(vocab->eos())])) pick = vocab->eos();
                    for (size_t k = 0; k < closers.size() && pick < 0; ++k) {
                        TokenId t = index->find(closers[k]);
                        if (t >= 0 && !std::isinf(logits[static_cast<size_t>(t)])) pick = t;
                    }
                }
                if (pick < 0) pick = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
                ASSERT_FALSE(std::isinf(logits[static_cast<size_t>(pick)])) << "no token allowed after: " << text;
                sampler.accept(pick);
                if (vocab->is_eog(pick)) ended = true;
                else text += index->piece(pick);
            }
            ASSERT_TRUE(ended) << "seed " << seed << ": " << text;
            EXPECT_TRUE(is_valid_json(text)) << "seed " << seed << ": " << text;
            EXPECT_EQ(text.front(), '{');
        }
    }
}
