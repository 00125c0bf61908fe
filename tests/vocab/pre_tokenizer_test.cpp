// Pre-tokenizer splits, checked against the regex semantics by hand.

#include <gtest/gtest.h>

#include "vocab/pre_tokenizer.h"
#include "vocab/utf8.h"

namespace {

using cria::vocab::find_pre_tokenizer;
using cria::vocab::PreTokenizer;

std::vector<std::string> split(const std::string& name, const std::string& text) {
    const auto* config = find_pre_tokenizer(name);
    EXPECT_NE(config, nullptr) << name;
    PreTokenizer p(config->patterns);
    std::vector<cria::vocab::TextPiece> pieces;
    p.split(text, pieces);
    std::vector<std::string> out;
    for (const auto& piece : pieces) out.push_back(text.substr(piece.offset, piece.length));
    return out;
}

TEST(PreTokenizer, Llama3) {
    EXPECT_EQ(split("llama-bpe", "Hello world 123456 ~tilde  \n\n x"),
              (std::vector<std::string>{"Hello", " world", " ", "123", "456", " ~", "tilde", "  \n\n", " x"}));
    EXPECT_EQ(split("llama3", "I'M here"), (std::vector<std::string>{"I", "'M", " here"}));
}

TEST(PreTokenizer, Gpt2) {
    EXPECT_EQ(split("gpt-2", "I'm 5 ~ok   end"),
              (std::vector<std::string>{"I", "'m", " 5", " ~", "ok", "  ", " end"}));
    // Contractions are case-sensitive here, unlike llama3.
    EXPECT_EQ(split("gpt-2", "I'M"), (std::vector<std::string>{"I", "'", "M"}));
}

TEST(PreTokenizer, UnicodeCategoriesAreComplete) {
    // '~' and '½' are symbol / number: they never join letters.
    EXPECT_EQ(split("gpt-2", "a~b"), (std::vector<std::string>{"a", "~", "b"}));
    EXPECT_EQ(split("gpt-2", " ½x"), (std::vector<std::string>{" ½", "x"}));
    // U+3000 ideographic space is whitespace; U+180E is not (Unicode 6.3+).
    EXPECT_EQ(split("gpt-2", "a\u3000\u3000b"), (std::vector<std::string>{"a", "\u3000", "\u3000", "b"}));
}

TEST(PreTokenizer, EmptyMatchesSplitLikeStdRegex) {
    // superbpe: digits, then a zero-width match before each group of three from the right.
    EXPECT_EQ(split("superbpe", "1234567"), (std::vector<std::string>{"1", "234", "567"}));
}

TEST(PreTokenizer, RegexesApplyInTurnToEachPiece) {
    // starcoder: single digits first, then GPT-2 inside what is left.
    EXPECT_EQ(split("starcoder", "ab12 cd"), (std::vector<std::string>{"ab", "1", "2", " cd"}));
}

TEST(PreTokenizer, LongWhitespaceRunsDoNotBlowTheStack) {
    const std::string text = std::string(200000, ' ') + "x" + std::string(100000, '\n');
    const auto pieces = split("llama3", text);
    std::string joined;
    for (const auto& p : pieces) joined += p;
    EXPECT_EQ(joined, text);
}

TEST(Utf8, DecodesLikeLlamaCpp) {
    using cria::vocab::utf8::decode_all;
    EXPECT_EQ(decode_all("a\xc3\xa9"), (std::vector<uint32_t>{'a', 0xE9}));
    EXPECT_EQ(decode_all("\xff\x80"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
    EXPECT_EQ(decode_all("\xe2\x82"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
    EXPECT_EQ(cria::vocab::utf8::sanitize("x\xc3("), "x\xef\xbf\xbd(");
}

TEST(Utf8, CompletePrefixHoldsBackUnfinishedCharacters) {
    using cria::vocab::utf8::complete_prefix_length;
    EXPECT_EQ(complete_prefix_length("ab\xf0\x9f"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\xf0\x9f\xa6\x99"), 6u);
    EXPECT_EQ(complete_prefix_length("ab\xc3"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\xff"), 3u);  // can never complete
    EXPECT_EQ(complete_prefix_length("\x80\x80\x80\x80"), 4u);
}

}  // namespace
