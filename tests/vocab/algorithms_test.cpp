// The tokenizer algorithms on small hand-built vocabularies, where the right
// answer follows from the rules by hand.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"
#include "vocab/byte_encoding.h"

namespace {

using cria::vocab::TokenId;
using cria::vocab::TokenType;
using cria::vocab::Vocab;
using cria::vocab::VocabSpec;

constexpr int32_t kNormal = static_cast<int32_t>(TokenType::Normal);
constexpr int32_t kControl = static_cast<int32_t>(TokenType::Control);
constexpr int32_t kUnknown = static_cast<int32_t>(TokenType::Unknown);
constexpr int32_t kUserDefined = static_cast<int32_t>(TokenType::UserDefined);

// A byte-level BPE vocab: the 256 byte characters (id = byte), then `extra`.
VocabSpec byte_level(std::vector<std::string> extra, std::vector<std::string> merges, std::string pre = "gpt-2") {
    VocabSpec s;
    s.model = "gpt2";
    s.pre = std::move(pre);
    for (int b = 0; b < 256; ++b) s.tokens.push_back(cria::vocab::byte_encoding::byte_to_text(static_cast<uint8_t>(b)));
    for (auto& t : extra) s.tokens.push_back(std::move(t));
    s.merges = std::move(merges);
    s.add_bos = 0;
    s.add_sep = 0;  // jina-v1-en and friends would ask for a SEP token
    return s;
}

TEST(Bpe, MergesByRankWithinWords) {
    // 256 "Ġt", 257 "he", 258 "Ġthe"
    const Vocab v = Vocab::build(byte_level({"Ġt", "he", "Ġthe"}, {"Ġ t", "h e", "Ġt he"}));
    EXPECT_EQ(v.tokenize(" the", false), (std::vector<TokenId>{258}));
    EXPECT_EQ(v.tokenize("the", false), (std::vector<TokenId>{'t', 257}));
    // "the the": two words, each merged on its own.
    EXPECT_EQ(v.tokenize("the the", false), (std::vector<TokenId>{'t', 257, 258}));
}

TEST(Bpe, EqualPairsMergeLeftmostFirst) {
    const Vocab v = Vocab::build(byte_level({"aa"}, {"a a"}));
    EXPECT_EQ(v.tokenize("aaa", false), (std::vector<TokenId>{256, 'a'}));
    EXPECT_EQ(v.tokenize("aaaa", false), (std::vector<TokenId>{256, 256}));
}

TEST(Bpe, LowerRankWinsOverPosition) {
    // "b c" has the better rank, so "abc" -> "a" + "bc" although "a b" is further left.
    const Vocab v = Vocab::build(byte_level({"bc", "ab"}, {"b c", "a b"}));
    EXPECT_EQ(v.tokenize("abc", false), (std::vector<TokenId>{'a', 256}));
}

TEST(Bpe, UserDefinedTokensAreAlwaysMatchedControlOnlyWhenAsked) {
    VocabSpec s = byte_level({"<ctl>", "<usr>"}, {});
    s.types.assign(s.tokens.size(), kNormal);
    s.types[256] = kControl;
    s.types[257] = kUserDefined;
    const Vocab v = Vocab::build(s);
    EXPECT_EQ(v.tokenize("x<usr>", false, false), (std::vector<TokenId>{'x', 257}));
    const auto plain = v.tokenize("<ctl>", false, false);
    EXPECT_EQ(plain.size(), 5u);
    EXPECT_EQ(v.tokenize("<ctl>", false, true), (std::vector<TokenId>{256}));
}

TEST(Bpe, UnknownPreTokenizerIsAClearError) {
    EXPECT_THROW(Vocab::build(byte_level({}, {}, "gemma4")), cria::Error);
    EXPECT_THROW(Vocab::build(byte_level({}, {}, "no-such-pre")), cria::Error);
    VocabSpec s = byte_level({}, {});
    s.model = "rwkv";
    EXPECT_THROW(Vocab::build(s), cria::Error);
}

TEST(Bpe, EveryKnownPreTokenizerBuildsAndSplits) {
    for (const std::string& name : cria::vocab::known_pre_tokenizers()) {
        SCOPED_TRACE(name);
        const Vocab v = Vocab::build(byte_level({}, {}, name));
        const std::string text = "Hello, World! It's 2024: ½ 我想 🦙\n\n  x";
        // No merges: every byte is its own token, so the ids are the bytes.
        const auto ids = v.tokenize(text, false);
        ASSERT_EQ(ids.size(), text.size());
        for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<unsigned char>(text[i]));
    }
}

TEST(Spm, HighestScoreMergesFirstAndBytesFallBack) {
    VocabSpec s;
    s.model = "llama";
    s.tokens = {"<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "ab", "<0x63>"};
    s.types = {kUnknown, kControl, kControl, kNormal, kNormal, kNormal, kNormal, kNormal, 6};
    s.scores = {0, 0, 0, -1, -2, -2, -3, -1, 0};
    const Vocab v = Vocab::build(s);
    // "▁ab": "ab" (-1) beats "▁a" (-3); then nothing joins "▁" + "ab".
    EXPECT_EQ(v.tokenize("ab"), (std::vector<TokenId>{1, 3, 7}));
    // "c" is no token: it falls back to <0x63>.
    EXPECT_EQ(v.tokenize("c", false), (std::vector<TokenId>{3, 8}));
    EXPECT_EQ(v.detokenize(v.tokenize("abc", false)), "abc");
}

TEST(Wpm, LowercasesStripsAccentsAndSplitsPunctuation) {
    VocabSpec s;
    s.model = "bert";
    s.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "▁un", "aff", "able", "▁!", "▁hello"};
    s.types = {kControl, kUnknown, kControl, kControl, kControl, kNormal, kNormal, kNormal, kNormal, kNormal};
    s.bos = 2, s.sep = 3, s.unk = 1, s.pad = 0, s.mask = 4;
    const Vocab v = Vocab::build(s);
    EXPECT_EQ(v.tokenize("Ünaffable!"), (std::vector<TokenId>{2, 5, 6, 7, 8, 3}));
    EXPECT_EQ(v.tokenize("HELLO  xyz", false), (std::vector<TokenId>{9, 1}));
}

TEST(Ugm, ViterbiPicksTheBestTotalScore) {
    VocabSpec s;
    s.model = "t5";
    s.tokens = {"<pad>", "</s>", "<unk>", "▁", "a", "b", "▁a", "ab", "▁ab"};
    s.types = {kControl, kControl, kUnknown, kNormal, kNormal, kNormal, kNormal, kNormal, kNormal};
    s.scores = {0, 0, 0, -1, -3, -3, -1, -1.5f, -3.5f};
    s.add_space_prefix = 1;
    const Vocab v = Vocab::build(s);
    // "▁" + "ab" = -2.5 beats "▁ab" = -3.5 and "▁a" + "b" = -4.
    EXPECT_EQ(v.tokenize("ab"), (std::vector<TokenId>{3, 7, 1}));
    // Unknown characters cost min score - 10; a run of them is one <unk>.
    EXPECT_EQ(v.tokenize("abcc", false), (std::vector<TokenId>{3, 7, 2}));
}

TEST(SpecialTokens, Phi3SpecialsEatTheWhitespaceAfterThem) {
    const Vocab v = Vocab::load(cria::test::data_path("tokenizer/ggml-vocab-phi-3.gguf").string());
    const TokenId user = v.find("<|user|>");
    ASSERT_NE(user, cria::vocab::kNoToken);
    const auto spaced = v.tokenize("<|user|>\n  Hi", false, true);
    EXPECT_EQ(spaced.front(), user);
    EXPECT_EQ(spaced, v.tokenize("<|user|>Hi", false, true));
}

}  // namespace

namespace {

// Found by the fuzzer: falcon's vocab has no token for some byte characters;
// llama.cpp then drops those bytes, and so do we (no crash, no invented ids).
TEST(FuzzRegression, BytesWithoutTokensAreDropped) {
    const Vocab v = Vocab::load(cria::test::data_path("tokenizer/ggml-vocab-falcon.gguf").string());
    const std::string& byte3 = cria::vocab::byte_encoding::byte_to_text(0x03);
    ASSERT_EQ(v.find(byte3), cria::vocab::kNoToken);
    EXPECT_TRUE(v.tokenize("\x03\x03", false).empty());
    // The control byte is a word of its own, so "a" and "b" are not merged.
    EXPECT_EQ(v.tokenize("a\x03" "b", false), (std::vector<TokenId>{v.find("a"), v.find("b")}));
}

}  // namespace

namespace {

// A malformed lead byte swallows the following bytes into one symbol, even a
// newline; splitting the text at newlines must not change that.
TEST(Spm, TruncatedSequenceBeforeNewlineKeepsLlamaCppSymbols) {
    const Vocab v = Vocab::load(cria::test::data_path("tokenizer/ggml-vocab-llama-spm.gguf").string());
    const auto ids = v.tokenize("a\xe2\nbc", false);
    // "▁a" then the 3-byte symbol E2 0A 62 (not a token) as bytes, then "c".
    const std::vector<TokenId> want = {v.find("\xe2\x96\x81" "a"), v.find("<0xE2>"), v.find("<0x0A>"), v.find("<0x62>"),
                                       v.find("c")};
    EXPECT_EQ(ids, want);
}

}  // namespace

namespace {

// A precompiled character map (SentencePiece's XOR-compressed double array)
// built by hand with one rule, "A" -> "a": root base 0, so byte 0x41 leads
// to node 65, a leaf whose base 3 points at node 65 ^ 3 = 66, which holds
// offset 0 into the replacement strings "a\0".
std::vector<uint8_t> one_rule_charsmap() {
    std::vector<uint32_t> nodes(256, 0);  // every first byte must land inside the array
    nodes[65] = (3u << 10) | (1u << 8) | 0x41u;  // base 3, leaf, label 'A'
    nodes[66] = (1u << 31) | 0u;                 // replacement at offset 0
    std::vector<uint8_t> blob;
    const uint32_t size = static_cast<uint32_t>(nodes.size() * 4);
    for (int i = 0; i < 4; ++i) blob.push_back(static_cast<uint8_t>(size >> (8 * i)));
    for (uint32_t n : nodes) {
        for (int i = 0; i < 4; ++i) blob.push_back(static_cast<uint8_t>(n >> (8 * i)));
    }
    blob.push_back('a');
    blob.push_back(0);
    return blob;
}

TEST(Ugm, PrecompiledCharsmapNormalises) {
    VocabSpec s;
    s.model = "t5";
    s.tokens = {"<pad>", "</s>", "<unk>", "▁", "a", "B", "▁a"};
    s.types = {kControl, kControl, kUnknown, kNormal, kNormal, kNormal, kNormal};
    s.scores = {0, 0, 0, -2, -2, -2, -1};
    s.add_space_prefix = 1;
    s.precompiled_charsmap = one_rule_charsmap();
    const Vocab v = Vocab::build(s);
    EXPECT_EQ(v.tokenize("A", false), (std::vector<TokenId>{6}));      // "▁a"
    EXPECT_EQ(v.tokenize("a", false), (std::vector<TokenId>{6}));
    EXPECT_EQ(v.tokenize("B", false), (std::vector<TokenId>{3, 5}));   // no rule for "B"
}

TEST(Ugm, MalformedCharsmapIsAnError) {
    VocabSpec s;
    s.model = "t5";
    s.tokens = {"<pad>", "</s>", "<unk>", "a"};
    s.precompiled_charsmap = {0xFF, 0xFF, 0x00, 0x00, 1, 2, 3};  // claims 65535 bytes
    EXPECT_THROW(Vocab::build(s), cria::Error);
}

}  // namespace
