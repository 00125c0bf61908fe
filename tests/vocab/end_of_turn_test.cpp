// Which tokens end generation for the formats that end a turn with a token
// of their own (muse-glimmer: <|eot|> from tokenizer.ggml.eot_token_id ends
// it; <|eom|> only ends a message, and generation goes on into the next one:
// llama.cpp's vocabulary recognises neither text by itself).

#include <gtest/gtest.h>

#include "cria/vocab/vocab.h"

namespace {

using cria::vocab::Vocab;
using cria::vocab::VocabSpec;

VocabSpec muse_glimmer_like() {
    VocabSpec s;
    s.model = "llama";
    s.tokens = {"<unk>", "<s>", "</s>", "<|start|>", "<|message|>", "<|eom|>", "<|eot|>", "\xE2\x96\x81" "a"};
    s.types = {2, 3, 3, 3, 3, 3, 3, 1};
    s.unk = 0;
    s.bos = 1;
    s.eos = 2;
    return s;
}

TEST(EndOfTurn, TheEotTokenEndsGenerationAndTheEomTokenDoesNot) {
    VocabSpec spec = muse_glimmer_like();
    spec.eot = 6;  // tokenizer.ggml.eot_token_id
    const Vocab v = Vocab::build(spec);
    EXPECT_EQ(v.eot(), 6);
    EXPECT_TRUE(v.is_eog(6));
    EXPECT_FALSE(v.is_eog(5));  // <|eom|>
    EXPECT_FALSE(v.is_eog(3));  // <|start|>
    EXPECT_TRUE(v.is_eog(2));   // </s>
}

TEST(EndOfTurn, NeitherTextIsGuessedWithoutTheKey) {
    const Vocab v = Vocab::build(muse_glimmer_like());
    EXPECT_FALSE(v.is_eog(6));
    EXPECT_FALSE(v.is_eog(5));
}

}  // namespace
