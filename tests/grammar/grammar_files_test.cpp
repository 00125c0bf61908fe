// The example grammars in tests/data/grammars: each parses, and accepts and
// rejects what it should.

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "cria/grammar/automaton.h"
#include "cria/grammar/gbnf.h"
#include "support/test_paths.h"

using namespace cria::grammar;

namespace {

std::string read_grammar(const std::string& name) {
    std::ifstream in(cria::test::data_path("grammars/" + name + ".gbnf"), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Case {
    const char* grammar;
    std::vector<std::string> good;
    std::vector<std::string> bad;
};

class GrammarFiles : public ::testing::TestWithParam<Case> {};

TEST_P(GrammarFiles, AcceptsAndRejects) {
    const Case& c = GetParam();
    std::string text = read_grammar(c.grammar);
    ASSERT_FALSE(text.empty()) << c.grammar;
    Grammar g = parse_gbnf(text);
    for (const auto& s : c.good) EXPECT_TRUE(matches(g, s)) << c.grammar << " should accept: " << s;
    for (const auto& s : c.bad) EXPECT_FALSE(matches(g, s)) << c.grammar << " should reject: " << s;
}

INSTANTIATE_TEST_SUITE_P(
    All, GrammarFiles,
    ::testing::Values(
        Case{"arithmetic",
             {"1+2= 3\n", "x*(y+z)= 42\n", "a= b\nc= d\n", "(1)= 1\n"},
             {"1+2=3", "1+= 2\n", "A= 1\n", "= 1\n"}},
        Case{"c",
             {"int main(){return 0;}", "int f(int x){x = x+1;return x;}", "",
              "float g(){while(a<b){a = a+1;}}", "char h(){/* hi */}"},
             {"int main()", "main(){}", "int main(){return 0}", "int 1x(){}"}},
        Case{"chess",
             {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. e3 O-O\n", "1. e4 e5\n2. exd5+ Qxd5#\n"},
             {"1. e4 e5\n", "1. e9 e5\n2. Nf3 Nc6\n", "2. e4 e5\n3. d4 d5\n", "1. e4 e5\n2. Zf3 Nc6\n"}},
        Case{"english",
             {"Hello, world!", "a b\tc", "x[y]z\\"},
             {"", "hello ", "two  spaces", "caf\xC3\xA9"}},
        Case{"japanese",
             {"こんにちは", "カタカナ 漢字", "日本語、です"},
             {"", "hello", "こんにちは ", "日本\xC3\xA9"}},
        Case{"json",
             {"{}", "{\"a\": 1}", "{\"a\":[1,2.5,-3e+12,true,null,\"x\"]}", "{\"k\": {\"n\": \"\\u00e9\\n\"}}",
              "{\"a\" :1}"},
             {"[]", "{", "{\"a\" 1}", "{\"a\": 01}", "{a: 1}", "{\"a\": \"\x01\"}", "{\"a\": tru}"}},
        Case{"json_arr",
             {"[\n]", "[\n1,\n2]", "[\n{\"a\": [1, 2]},\n\"s\"]"},
             {"[]", "[\n1,2]", "{}", "[\n1,\n]"}},
        Case{"list",
             {"- one\n", "- one\n- two two\n", "- caf\xC3\xA9\n"},
             {"", "- \n", "one\n", "- a\r\n", "- a\xE2\x80\xA8\n"}}));

}  // namespace
