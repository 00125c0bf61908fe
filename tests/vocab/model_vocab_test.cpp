// The bundled models' vocabularies: stories260K (SentencePiece BPE with byte
// fallback) and austen-7m (byte-level BPE, Llama-3 pre-tokenizer). The
// expected ids are derived from the tokenizer rules and looked up by text,
// never copied from our own output.

#include <gtest/gtest.h>

#include "cria/vocab/streaming_detokenizer.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace {

using cria::vocab::DetokenizeOptions;
using cria::vocab::kNoToken;
using cria::vocab::StreamingDetokenizer;
using cria::vocab::TokenId;
using cria::vocab::Vocab;

const Vocab& stories() {
    static const Vocab v = Vocab::load(cria::test::model_path("stories260K/stories260K.gguf").string());
    return v;
}
const Vocab& austen() {
    static const Vocab v = Vocab::load(cria::test::model_path("austen-7m/austen-7m-f32.gguf").string());
    return v;
}

TokenId must_find(const Vocab& v, const std::string& text) {
    const TokenId id = v.find(text);
    EXPECT_NE(id, kNoToken) << "token '" << text << "' should exist";
    return id;
}

std::string raw_detokenize(const Vocab& v, const std::vector<TokenId>& ids) {
    DetokenizeOptions o;
    o.clean_spaces = 0;
    return v.detokenize(ids, o);
}

std::string streamed(const Vocab& v, const std::vector<TokenId>& ids, bool* emitted_partial) {
    StreamingDetokenizer s(v);
    std::string all;
    for (TokenId id : ids) {
        const std::string part = s.push(id);
        // Every emitted chunk must end on a character boundary.
        if (!part.empty()) {
            const auto last = static_cast<unsigned char>(part.back());
            if (last >= 0xC0) *emitted_partial = true;
        }
        all += part;
    }
    return all + s.flush();
}

const std::string kMixed =
    "Hello, world! 🦙 llamas & 我想在apple工作 ~tilde~  \t\n\n  spaces  end. Ünïcödé ½ 3333333";

// --- stories260K: SentencePiece ---------------------------------------------

TEST(StoriesVocab, MetadataAsExpected) {
    EXPECT_EQ(stories().type(), cria::vocab::VocabType::Spm);
    EXPECT_EQ(stories().size(), 512u);
    EXPECT_EQ(stories().bos(), 1);
    EXPECT_EQ(stories().eos(), 2);
    EXPECT_TRUE(stories().add_bos());
    EXPECT_TRUE(stories().is_eog(2));
}

TEST(StoriesVocab, CharactersOutsideTheVocabFallBackToBytes) {
    // "🦙" is F0 9F A6 99; the text gets SentencePiece's leading "▁".
    const std::vector<TokenId> want = {1, must_find(stories(), "\xe2\x96\x81"), must_find(stories(), "<0xF0>"),
                                       must_find(stories(), "<0x9F>"), must_find(stories(), "<0xA6>"),
                                       must_find(stories(), "<0x99>")};
    EXPECT_EQ(stories().tokenize("🦙"), want);
    // CJK: 我 = E6 88 91.
    const std::vector<TokenId> cjk = {must_find(stories(), "\xe2\x96\x81"), must_find(stories(), "<0xE6>"),
                                      must_find(stories(), "<0x88>"), must_find(stories(), "<0x91>")};
    EXPECT_EQ(stories().tokenize("我", false), cjk);
}

TEST(StoriesVocab, InvalidUtf8IsKeptByteForByte) {
    const std::string bad = "a\xff\xc3(b\xe2\x82";
    const auto ids = stories().tokenize(bad, false);
    EXPECT_NE(std::find(ids.begin(), ids.end(), must_find(stories(), "<0xFF>")), ids.end());
    EXPECT_EQ(raw_detokenize(stories(), ids), bad);
}

TEST(StoriesVocab, SpecialTokensOnlyWhenAsked) {
    EXPECT_EQ(stories().tokenize("<s>", true, true), (std::vector<TokenId>{1, 1}));
    const auto plain = stories().tokenize("<s>", true, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 1);  // only the added BOS
    EXPECT_EQ(raw_detokenize(stories(), {plain.begin() + 1, plain.end()}), "<s>");
    EXPECT_EQ(stories().token_to_piece(1, false), "");
    EXPECT_EQ(stories().token_to_piece(1, true), "<s>");
}

TEST(StoriesVocab, WhitespaceRunsAndLeadingSpaceRoundTrip) {
    for (const std::string text : {"a   b", "  two leading", "trailing   ", "\t\ttabs\n\nnewlines\n", " "}) {
        EXPECT_EQ(raw_detokenize(stories(), stories().tokenize(text, false)), text);
    }
    // llama.cpp keeps the added space when it strips a leading BOS (its
    // detokenizer turns the space removal off then); we do the same.
    DetokenizeOptions o;
    o.remove_special = true;
    EXPECT_EQ(stories().detokenize(stories().tokenize("Hello", true), o), " Hello");
    EXPECT_EQ(stories().detokenize(stories().tokenize("Hello", false), o), "Hello");
}

TEST(StoriesVocab, LongInputRoundTripsAndStreams) {
    std::string text;
    for (int i = 0; i < 3000; ++i) text += kMixed;
    const auto ids = stories().tokenize(text, false);
    EXPECT_EQ(raw_detokenize(stories(), ids), text);
    bool partial = false;
    EXPECT_EQ(streamed(stories(), ids, &partial), raw_detokenize(stories(), ids));
    EXPECT_FALSE(partial);
}

TEST(StoriesVocab, StreamingHoldsBackSplitCharacters) {
    StreamingDetokenizer s(stories());
    EXPECT_EQ(s.push(stories().find("<0xF0>")), "");
    EXPECT_EQ(s.push(stories().find("<0x9F>")), "");
    EXPECT_EQ(s.push(stories().find("<0xA6>")), "");
    EXPECT_EQ(s.push(stories().find("<0x99>")), "🦙");
    EXPECT_EQ(s.flush(), "");
}

// --- austen-7m: byte-level BPE, Llama-3 pre-tokenizer -------------------------

TEST(AustenVocab, MetadataAsExpected) {
    EXPECT_EQ(austen().type(), cria::vocab::VocabType::Bpe);
    EXPECT_EQ(austen().pre(), "llama-bpe");
    EXPECT_FALSE(austen().add_bos());  // the file says so, overriding llama3's default
    EXPECT_TRUE(austen().is_eog(austen().find("<|im_end|>")));
}

TEST(AustenVocab, TheFirst256TokensAreTheBytes) {
    // The vocab lists byte characters in byte order, so a byte's id is its value.
    EXPECT_EQ(austen().find("A"), 0x41);
    EXPECT_EQ(austen().find("\xc4\xa0"), 0x20);  // "Ġ" stands for the space byte
    EXPECT_EQ(austen().token_to_piece(0x20), " ");
}

TEST(AustenVocab, MergesApplyWithinPreTokens) {
    // Merge rank 0 is "Ġ t", rank 1 "h e": " the" ends as one token if "Ġthe" exists.
    EXPECT_EQ(austen().tokenize(" the", false), (std::vector<TokenId>{must_find(austen(), "\xc4\xa0the")}));
    // Llama-3 splits "a   b" into "a", "  ", " b".
    EXPECT_EQ(austen().tokenize("a   b", false),
              (std::vector<TokenId>{must_find(austen(), "a"), must_find(austen(), "\xc4\xa0\xc4\xa0"),
                                    must_find(austen(), "\xc4\xa0" "b")}));
}

TEST(AustenVocab, TildeIsASymbolAndStaysWithItsSpace) {
    // " ~" is one pre-token (space + \p{S}); its bytes merge if the vocab has "Ġ~".
    const auto ids = austen().tokenize(" ~", false);
    const TokenId joined = austen().find("\xc4\xa0~");
    if (joined != kNoToken) {
        EXPECT_EQ(ids, (std::vector<TokenId>{joined}));
    } else {
        EXPECT_EQ(ids, (std::vector<TokenId>{0x20, 0x7E}));
    }
}

TEST(AustenVocab, EmojiAndCjkBecomeByteTokensWhenUnmerged) {
    const std::string llama = "🦙";
    const auto ids = austen().tokenize(llama, false);
    EXPECT_EQ(raw_detokenize(austen(), ids), llama);
    for (TokenId id : ids) EXPECT_LT(id, 4093);
    const auto cjk = austen().tokenize("我想在apple工作", false);
    EXPECT_EQ(raw_detokenize(austen(), cjk), "我想在apple工作");
}

TEST(AustenVocab, InvalidUtf8BecomesReplacementCharacters) {
    // As in llama.cpp: each bad byte is read as U+FFFD (EF BF BD).
    const auto ids = austen().tokenize("\xff", false);
    EXPECT_EQ(raw_detokenize(austen(), ids), "\xef\xbf\xbd");
    EXPECT_EQ(raw_detokenize(austen(), austen().tokenize("x\xc3", false)), "x\xef\xbf\xbd");
}

TEST(AustenVocab, SpecialTokensOnlyWhenAsked) {
    const TokenId start = must_find(austen(), "<|im_start|>");
    const TokenId end = must_find(austen(), "<|im_end|>");
    const auto parsed = austen().tokenize("<|im_start|>user\nhi<|im_end|>", false, true);
    ASSERT_GE(parsed.size(), 3u);
    EXPECT_EQ(parsed.front(), start);
    EXPECT_EQ(parsed.back(), end);
    const auto plain = austen().tokenize("<|im_start|>user", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), start), 0);
    EXPECT_EQ(raw_detokenize(austen(), plain), "<|im_start|>user");
    DetokenizeOptions shown;
    shown.unparse_special = true;
    shown.clean_spaces = 0;
    EXPECT_EQ(austen().detokenize(parsed, shown), "<|im_start|>user\nhi<|im_end|>");
    EXPECT_EQ(raw_detokenize(austen(), parsed), "user\nhi");
}

TEST(AustenVocab, LongInputRoundTripsAndStreams) {
    std::string text;
    for (int i = 0; i < 3000; ++i) text += kMixed;
    text += std::string(5000, ' ') + "x" + std::string(3000, '\n');
    const auto ids = austen().tokenize(text, false);
    EXPECT_EQ(raw_detokenize(austen(), ids), text);
    bool partial = false;
    EXPECT_EQ(streamed(austen(), ids, &partial), raw_detokenize(austen(), ids));
    EXPECT_FALSE(partial);
}

TEST(AustenVocab, CleanSpacesFollowsLlamaCpp) {
    // llama3 vocabs clean " ," and " 's" when detokenizing.
    const auto ids = austen().tokenize("a , b 's c", false);
    EXPECT_EQ(austen().detokenize(ids), "a, b's c");
}

}  // namespace

namespace {

// Found by the fuzzer: SentencePiece cannot tell a literal U+2581 from the
// space it stands for, so it detokenizes as a space (llama.cpp does the same).
TEST(FuzzRegression, SpmLiteralSpaceMarkComesBackAsSpace) {
    const auto ids = stories().tokenize("a\xe2\x96\x81of", false);
    EXPECT_EQ(raw_detokenize(stories(), ids), "a of");
}

}  // namespace

namespace {

// gpt-neox's vocab file predates tokenizer.ggml.pre: like llama.cpp we fall
// back to the "default" pre-tokenizer, and say so.
TEST(MissingPreTokenizer, FallsBackToDefaultWithAWarning) {
    const Vocab v = Vocab::load(cria::test::data_path("tokenizer/ggml-vocab-gpt-neox.gguf").string());
    EXPECT_EQ(v.pre(), "default");
    ASSERT_EQ(v.warnings().size(), 1u);
    EXPECT_NE(v.warnings()[0].find("default"), std::string::npos);
    EXPECT_TRUE(stories().warnings().empty());
    EXPECT_TRUE(austen().warnings().empty());
}

}  // namespace
