// GBNF syntax: every construct and escape, and the errors.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/grammar/automaton.h"
#include "cria/grammar/gbnf.h"

using namespace cria::grammar;

namespace {

bool accepts(const std::string& gbnf, const std::string& text) { return matches(parse_gbnf(gbnf), text); }

std::string error_of(const std::string& gbnf) {
    try {
        parse_gbnf(gbnf);
    } catch (const cria::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(GbnfParse, LiteralsSequencesAlternatives) {
    const std::string g = "root ::= \"ab\" c | \"x\"\nc ::= \"c\" | \"d\"\n";
    EXPECT_TRUE(accepts(g, "abc"));
    EXPECT_TRUE(accepts(g, "abd"));
    EXPECT_TRUE(accepts(g, "x"));
    EXPECT_FALSE(accepts(g, "ab"));
    EXPECT_FALSE(accepts(g, "abcd"));
    EXPECT_FALSE(accepts(g, ""));
}

TEST(GbnfParse, AlternativesContinueOnNextLineAfterBar) {
    const std::string g = "root ::= \"a\" |\n  \"b\"\n";
    EXPECT_TRUE(accepts(g, "a"));
    EXPECT_TRUE(accepts(g, "b"));
}

TEST(GbnfParse, GroupsSpanLines) {
    const std::string g = "root ::= (\n  \"a\"\n  \"b\"\n)\n";
    EXPECT_TRUE(accepts(g, "ab"));
    EXPECT_FALSE(accepts(g, "a"));
}

TEST(GbnfParse, StarPlusQuestion) {
    EXPECT_TRUE(accepts("root ::= \"a\"*", ""));
    EXPECT_TRUE(accepts("root ::= \"a\"*", "aaaa"));
    EXPECT_FALSE(accepts("root ::= \"a\"+", ""));
    EXPECT_TRUE(accepts("root ::= \"a\"+", "aaa"));
    EXPECT_TRUE(accepts("root ::= \"a\"? \"b\"", "b"));
    EXPECT_TRUE(accepts("root ::= \"a\"? \"b\"", "ab"));
    EXPECT_FALSE(accepts("root ::= \"a\"? \"b\"", "aab"));
    // A repeated string repeats as a whole.
    EXPECT_TRUE(accepts("root ::= \"ab\"+", "abab"));
    EXPECT_FALSE(accepts("root ::= \"ab\"+", "aba"));
    EXPECT_TRUE(accepts("root ::= (\"a\" | \"b\")* \"c\"", "abbac"));
}

TEST(GbnfParse, BoundedRepetitions) {
    const std::string exact = "root ::= [0-9]{3}";
    EXPECT_TRUE(accepts(exact, "123"));
    EXPECT_FALSE(accepts(exact, "12"));
    EXPECT_FALSE(accepts(exact, "1234"));
    const std::string at_least = "root ::= \"x\"{2,}";
    EXPECT_FALSE(accepts(at_least, "x"));
    EXPECT_TRUE(accepts(at_least, "xx"));
    EXPECT_TRUE(accepts(at_least, "xxxxxxx"));
    const std::string range = "root ::= (\"a\" | \"b\"){1,3}";
    EXPECT_FALSE(accepts(range, ""));
    EXPECT_TRUE(accepts(range, "a"));
    EXPECT_TRUE(accepts(range, "bab"));
    EXPECT_FALSE(accepts(range, "abab"));
    EXPECT_TRUE(accepts("root ::= \"a\"{0,2} \"b\"", "b"));
    EXPECT_TRUE(accepts("root ::= \"a\"{ 2 , 3 }", "aaa"));
    EXPECT_TRUE(accepts("root ::= \"a\"{0}", ""));
    EXPECT_FALSE(accepts("root ::= \"a\"{0}", "a"));
}

TEST(GbnfParse, CharacterClasses) {
    const std::string g = "root ::= [a-cx]+";
    EXPECT_TRUE(accepts(g, "abcx"));
    EXPECT_FALSE(accepts(g, "abd"));
    const std::string neg = "root ::= [^a-c\\n]+";
    EXPECT_TRUE(accepts(neg, "xyz!"));
    EXPECT_FALSE(accepts(neg, "xbz"));
    EXPECT_FALSE(accepts(neg, "x\n"));
    EXPECT_TRUE(accepts("root ::= [-a]+", "-a-"));   // leading dash is literal
    EXPECT_TRUE(accepts("root ::= [a-]+", "a-"));    // trailing dash is literal
    EXPECT_TRUE(accepts("root ::= [^]", "\xE2\x82\xAC"));  // [^] excludes nothing
}

TEST(GbnfParse, AnyChar) {
    EXPECT_TRUE(accepts("root ::= . .", "a\xC3\xA9"));
    EXPECT_FALSE(accepts("root ::= . .", "abc"));
    EXPECT_TRUE(accepts("root ::= \"<\" .* \">\"", "<anything \xF0\x9F\x98\x80 here>"));
}

TEST(GbnfParse, EscapesInStrings) {
    EXPECT_TRUE(accepts("root ::= \"\\n\"", "\n"));
    EXPECT_TRUE(accepts("root ::= \"\\t\"", "\t"));
    EXPECT_TRUE(accepts("root ::= \"\\r\"", "\r"));
    EXPECT_TRUE(accepts("root ::= \"\\\\\"", "\\"));
    EXPECT_TRUE(accepts("root ::= \"\\\"\"", "\""));
    EXPECT_TRUE(accepts("root ::= \"\\x41\\x7a\"", "Az"));
    EXPECT_TRUE(accepts("root ::= \"\\u00e9\\u20AC\"", "\xC3\xA9\xE2\x82\xAC"));
    EXPECT_TRUE(accepts("root ::= \"\\U0001F600\"", "\xF0\x9F\x98\x80"));
    EXPECT_TRUE(accepts("root ::= \"\\[\\]\"", "[]"));
    EXPECT_FALSE(accepts("root ::= \"\\x41\"", "x41"));
}

TEST(GbnfParse, EscapesInClasses) {
    EXPECT_TRUE(accepts("root ::= [\\n\\t\\r]+", "\n\t\r"));
    EXPECT_TRUE(accepts("root ::= [\\]]", "]"));
    EXPECT_TRUE(accepts("root ::= [\\\\]", "\\"));
    EXPECT_TRUE(accepts("root ::= [\\\"]", "\""));
    // \- is a literal dash, not a range.
    const std::string dash = "root ::= [a\\-z]+";
    EXPECT_TRUE(accepts(dash, "a-z"));
    EXPECT_FALSE(accepts(dash, "b"));
    EXPECT_TRUE(accepts("root ::= [\\x30-\\x39]+", "0129"));
    EXPECT_FALSE(accepts("root ::= [\\x30-\\x39]+", "a"));
    EXPECT_TRUE(accepts("root ::= [\\u3041-\\u309F]+", "\xE3\x81\x82"));
    EXPECT_TRUE(accepts("root ::= [\\U0001F600-\\U0001F64F]", "\xF0\x9F\x98\x83"));
    EXPECT_FALSE(accepts("root ::= [\\U0001F600-\\U0001F64F]", "\xF0\x9F\x99\x90"));
}

TEST(GbnfParse, UnicodeLiteralsAndRanges) {
    EXPECT_TRUE(accepts("root ::= \"日本\" [ぁ-ゟ]", "日本の"));
    EXPECT_FALSE(accepts("root ::= \"日本\" [ぁ-ゟ]", "日本ア"));
}

TEST(GbnfParse, CommentsAndBlankLines) {
    const std::string g = "# leading comment\n\nroot ::= a # trailing\n# between\n\na ::= \"a\"\n";
    EXPECT_TRUE(accepts(g, "a"));
}

TEST(GbnfParse, WindowsLineEndings) {
    EXPECT_TRUE(accepts("root ::= a\r\na ::= \"x\"\r\n", "x"));
}

TEST(GbnfParse, TokenReferences) {
    Grammar g = parse_gbnf("root ::= <[12]> !<[7]> \"x\"");
    ASSERT_FALSE(g.rules[g.root].empty());
    EXPECT_EQ(g.rules[g.root][0].type, ElementType::Token);
    EXPECT_EQ(g.rules[g.root][0].value, 12u);
    EXPECT_EQ(g.rules[g.root][1].type, ElementType::TokenNot);
    EXPECT_EQ(g.rules[g.root][1].value, 7u);
    // <text> needs a vocabulary...
    EXPECT_NE(error_of("root ::= <think>").find("needs a vocabulary"), std::string::npos);
    // ...which resolves it.
    Grammar with_vocab = parse_gbnf("root ::= <think> !<think>", "root", [](std::string_view t) { return t == "<think>" ? 42 : -1; });
    EXPECT_EQ(with_vocab.rules[with_vocab.root][0].value, 42u);
    EXPECT_EQ(with_vocab.rules[with_vocab.root][1].type, ElementType::TokenNot);
    EXPECT_THROW(parse_gbnf("root ::= <nope>", "root", [](std::string_view) { return -1; }), cria::Error);
}

TEST(GbnfParse, ToGbnfKeepsTheLanguage) {
    const std::string src = "root ::= (\"a\" [b-d\\]] [^\\n])* x{2,3} .\nx ::= \"\\u00e9\" | \"\\\"\"\n";
    Grammar g = parse_gbnf(src);
    Grammar again = parse_gbnf(g.to_gbnf());
    EXPECT_EQ(g.rules.size(), again.rules.size());
    for (const std::string s : {"\xC3\xA9\"z", "ab!\xC3\xA9\xC3\xA9.", "a]x\"\"\"?", "ae!\"\"z", "ab\n\"\"z", "\"z"}) {
        EXPECT_EQ(matches(g, s), matches(again, s)) << s;
    }
    EXPECT_TRUE(matches(again, "a]x\"\"\"?"));
}

TEST(GbnfErrors, LineAndColumn) {
    std::string e = error_of("root ::= a\na ::= \"x\" )\n");
    EXPECT_NE(e.find("line 2, column 11"), std::string::npos) << e;
    e = error_of("root ::= \"abc");
    EXPECT_NE(e.find("line 1"), std::string::npos) << e;
    EXPECT_NE(e.find("end of input"), std::string::npos) << e;
}

TEST(GbnfErrors, UndefinedRule) {
    std::string e = error_of("root ::= a b\na ::= \"x\"\n");
    EXPECT_NE(e.find("undefined rule 'b'"), std::string::npos) << e;
    EXPECT_NE(e.find("line 1, column 12"), std::string::npos) << e;
}

TEST(GbnfErrors, MissingRoot) {
    EXPECT_NE(error_of("start ::= \"x\"").find("no rule named 'root'"), std::string::npos);
    EXPECT_NO_THROW(parse_gbnf("start ::= \"x\"", "start"));
}

TEST(GbnfErrors, LeftRecursion) {
    EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left recursion"), std::string::npos);
    EXPECT_NE(error_of("root ::= a\na ::= b \"x\"\nb ::= a").find("left recursion"), std::string::npos);
    // Through a rule that can be empty.
    EXPECT_NE(error_of("root ::= e root \"x\" | \"y\"\ne ::= \"\" | \"z\"").find("left recursion"), std::string::npos);
    // Right recursion is fine.
    EXPECT_NO_THROW(parse_gbnf("root ::= \"a\" root | \"b\""));
}

TEST(GbnfErrors, BadSyntax) {
    EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"\\x4\"").find("hex digits"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"\\U00110000\"").find("U+10FFFF"), std::string::npos);
    EXPECT_NE(error_of("root := \"a\"").find("expecting ::="), std::string::npos);
    EXPECT_NE(error_of("root ::= [abc").find("character class"), std::string::npos);
    EXPECT_NE(error_of("root ::= []").find("empty character class"), std::string::npos);
    EXPECT_NE(error_of("root ::= * \"a\"").find("nothing before"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"{3,1}").find("n < m"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"{2").find("expecting '}'"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
    EXPECT_NE(error_of("root ::= (\"a\"").find("expecting ')'"), std::string::npos);
    EXPECT_NE(error_of("root ::= <[12").find("unterminated"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"\xC3\"").find("invalid UTF-8"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"{999999999}").find("too large"), std::string::npos);
}
