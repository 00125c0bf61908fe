// DRY on repeated token patterns: Z-algorithm repeat lengths, sequence
// breakers given as tokens, and breakers given as strings through a vocabulary.

#include <gtest/gtest.h>

#include <cmath>

#include "cria/sampling/samplers.h"
#include "cria/vocab/vocab.h"
#include "sampling_test_util.h"
#include "support/test_paths.h"

namespace cria::sampling {
namespace {

using test::from_logits;
using test::logits_of;

std::vector<float> dry_logits(Sampler& dry, std::initializer_list<TokenId> history, size_t n_vocab) {
    for (TokenId t : history) {
        dry.accept(t);
    }
    auto c = from_logits(std::vector<float>(n_vocab, 0.0f));
    dry.apply(c);
    return logits_of(c);
}

TEST(Dry, PenalisesTheTokenThatContinuesARepeat) {
    // History 0 1 2 0 1: the suffix "0 1" (length 2) was followed by 2 before.
    // allowed 2 -> penalty = 1.0 * 1.1^(2-2) = 1 on token 2 only.
    auto dry = make_dry_from_tokens(1024, 1.0f, 1.1f, 2, 5, {});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 0, 1}, 4), (std::vector<float>{0, 0, -1, 0}));
}

TEST(Dry, PenaltyGrowsExponentiallyWithTheRepeatLength) {
    // History 0 1 2 0 1 2 0 1. Reversed: 1 0 2 1 0 2 1 0. The suffix repeats
    // 3 back with length 5 ("0 1 2 0 1", then 2 followed) and 6 back with
    // length 2 (then 2 again). Max 5 -> penalty 1 * 2^(5-2) = 8 on token 2.
    auto dry = make_dry_from_tokens(1024, 1.0f, 2.0f, 2, -1, {});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 0, 1, 2, 0, 1}, 4), (std::vector<float>{0, 0, -8, 0}));
}

TEST(Dry, AllowedLengthOneAndSeveralContinuations) {
    // History 0 1 2 3 4 0 1, allowed 1, base 2: "0 1" repeats (length 2) -> token 2: 2^(2-1) = 2.
    // The length-1 suffix "1" appears only there too.
    auto dry = make_dry_from_tokens(1024, 1.0f, 2.0f, 1, 7, {});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 3, 4, 0, 1}, 5), (std::vector<float>{0, 0, -2, 0, 0}));
}

TEST(Dry, NothingBelowTheAllowedLength) {
    // History 0 1 2 0: suffix "0" repeats with length 1 < allowed 2.
    auto dry = make_dry_from_tokens(1024, 1.0f, 2.0f, 2, -1, {});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 0}, 3), (std::vector<float>{0, 0, 0}));
}

TEST(Dry, PenaltyLastNLimitsTheWindow) {
    // Window of the last 4 tokens of 0 1 2 0 1: "1 2 0 1" -> "1" repeats (len 1) only.
    auto dry = make_dry_from_tokens(1024, 1.0f, 2.0f, 2, 4, {});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 0, 1}, 3), (std::vector<float>{0, 0, 0}));
}

TEST(Dry, ABreakerInsideTheRepeatStopsIt) {
    // Breaker token 0 is one token back in 0 1 2 0 1: rep_limit = 1 < allowed 2.
    auto dry = make_dry_from_tokens(1024, 1.0f, 2.0f, 2, -1, {{0}});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 0, 1}, 3), (std::vector<float>{0, 0, 0}));
}

TEST(Dry, MultiTokenBreakerLimitsTheRepeatLength) {
    // History 0 1 5 6 2 0 1 with breaker "5 6" (head 5, tail 6). Going back,
    // 5 is 4 tokens back and 6 follows it, so rep_limit = 4 - 1 = 3. "0 1"
    // (length 2 <= 3) was followed by 5, a multi-token breaker head, which is
    // penalised: 1 * 2^(2-2) = 1.
    auto dry = make_dry_from_tokens(1024, 1.0f, 2.0f, 2, -1, {{5, 6}});
    EXPECT_EQ(dry_logits(*dry, {0, 1, 5, 6, 2, 0, 1}, 7), (std::vector<float>{0, 0, 0, 0, 0, -1, 0}));
}

TEST(Dry, DisabledSettings) {
    for (auto& dry : {make_dry_from_tokens(1024, 0.0f, 2.0f, 2, -1, {}),
                      make_dry_from_tokens(1024, 1.0f, 0.5f, 2, -1, {}),
                      make_dry_from_tokens(1024, 1.0f, 2.0f, 2, 0, {})}) {
        EXPECT_EQ(dry_logits(*dry, {0, 1, 2, 0, 1}, 3), (std::vector<float>{0, 0, 0}));
    }
}

TEST(Dry, ExponentIsClampedToAFiniteFloat) {
    // base 1000: max exponent = floor(88.72 / ln 1000) = 12; a repeat of 40
    // would need 1000^38. The penalty stays finite.
    std::vector<TokenId> pattern;
    auto dry = make_dry_from_tokens(4096, 1.0f, 1000.0f, 2, -1, {});
    for (int i = 0; i < 42; ++i) {
        dry->accept(i % 2 == 0 ? 0 : 1);
    }
    auto c = from_logits({0, 0});
    dry->apply(c);
    EXPECT_TRUE(std::isfinite(c[0].logit));
    EXPECT_FLOAT_EQ(c[0].logit, -std::pow(1000.0f, 12.0f));
}

TEST(Dry, ResetAndClone) {
    auto dry = make_dry_from_tokens(1024, 1.0f, 1.1f, 2, -1, {});
    for (TokenId t : {0, 1, 2, 0, 1}) {
        dry->accept(t);
    }
    auto copy = dry->clone();
    dry->reset();
    auto c = from_logits({0, 0, 0});
    dry->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{0, 0, 0}));
    c = from_logits({0, 0, 0});
    copy->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{0, 0, -1}));
}

// String breakers through a real vocabulary (stories260K, SentencePiece).
// "\n" is the byte token <0x0A>, whose text contains "\n", so it becomes a
// single-token breaker: the repeat before it stops, and it is never penalised itself.
TEST(Dry, StringBreakersThroughTheVocabulary) {
    const vocab::Vocab vocab = vocab::Vocab::load(cria::test::model_path("stories260K/stories260K.gguf").string());
    const TokenId nl = vocab.newline();
    ASSERT_NE(nl, vocab::kNoToken);
    const std::vector<TokenId> ab = vocab.tokenize("Once upon", false, false);
    ASSERT_GE(ab.size(), 2u);
    const TokenId a = ab[0];
    const TokenId b = ab[1];
    const size_t n = vocab.size();

    // a b NL a b: "a b" was followed by NL. Without breakers NL gets the penalty.
    auto plain = make_dry(vocab, 1024, 1.0f, 2.0f, 2, -1, {});
    for (TokenId t : {a, b, nl, a, b}) {
        plain->accept(t);
    }
    auto c = from_logits(std::vector<float>(n, 0.0f));
    plain->apply(c);
    EXPECT_EQ(c[static_cast<size_t>(nl)].logit, -1.0f);

    // With "\n" as a breaker it is exempt.
    auto with_nl = make_dry(vocab, 1024, 1.0f, 2.0f, 2, -1, {"\n"});
    for (TokenId t : {a, b, nl, a, b}) {
        with_nl->accept(t);
    }
    c = from_logits(std::vector<float>(n, 0.0f));
    with_nl->apply(c);
    EXPECT_EQ(c[static_cast<size_t>(nl)].logit, 0.0f);

    // a b NL a b NL a b: the newline two tokens back limits the repeat to 2,
    // so "a b" -> NL is still the only continuation, and NL is exempt: nothing penalised.
    auto again = make_dry(vocab, 1024, 1.0f, 2.0f, 2, -1, {"\n"});
    for (TokenId t : {a, b, nl, a, b, nl, a, b}) {
        again->accept(t);
    }
    c = from_logits(std::vector<float>(n, 0.0f));
    again->apply(c);
    for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(c[i].logit, 0.0f) << "token " << i;
    }
}

}  // namespace
}  // namespace cria::sampling
