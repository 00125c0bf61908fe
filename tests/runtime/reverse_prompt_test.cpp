// -r/--reverse-prompt: llama-completion's test on the last 32 tokens' text,
// with 2 characters of slack, or a one-token reverse prompt as the last token.

#include <gtest/gtest.h>

#include "cria/runtime/reverse_prompt.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

const vocab::Vocab& stories_vocab() {
    static const vocab::Vocab v = vocab::Vocab::load(test::model_path("stories260K/stories260K.gguf").string());
    return v;
}

TEST(ReversePrompt, FoundAtTheEndWithTwoCharactersOfSlack) {
    const auto& v = stories_vocab();
    const ReversePrompts r(v, {"the cat"});
    EXPECT_EQ(r.found(v.tokenize("Once upon a time the cat", false)), "the cat");
    EXPECT_EQ(r.found(v.tokenize("Once upon a time the cat.", false)), "the cat");   // 1 character after
    EXPECT_EQ(r.found(v.tokenize("Once upon a time the cat s", false)), "the cat");  // 2
    EXPECT_EQ(r.found(v.tokenize("Once upon a time the cat sat", false)), "");       // too far back
    EXPECT_EQ(r.found(v.tokenize("Once upon a time", false)), "");
    EXPECT_EQ(r.found({}), "");
    EXPECT_TRUE(ReversePrompts(v, {}).empty());
}

TEST(ReversePrompt, OnlyTheLast32TokensCount) {
    const auto& v = stories_vocab();
    const vocab::TokenId t = v.tokenize(" cat", false).back();
    const std::string piece = v.token_to_piece(t, true);
    std::string p32, p33;
    for (int i = 0; i < 32; ++i) p32 += piece;
    p33 = p32 + piece;
    const std::vector<vocab::TokenId> history(40, t);
    EXPECT_EQ(ReversePrompts(v, {p32}).found(history), p32);
    EXPECT_EQ(ReversePrompts(v, {p33}).found(history), "");  // longer than the window's text
}

}  // namespace
}  // namespace cria::runtime
