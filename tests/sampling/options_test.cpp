// The sampling flags of `cria run` / `cria serve` (sampling::options()):
// every flag lands in its parameter with llama.cpp's spelling and meaning,
// bad values are errors naming the flag, and a greedy chain built from the
// flags picks what llama.cpp's samplers pick on a tiny vocabulary, worked
// out by hand from src/llama-sampler.cpp (penalties: a positive logit is
// divided by the repeat penalty, a negative one multiplied, then
// count * frequency + presence is subtracted; logit bias is added first).

#include <gtest/gtest.h>

#include <cmath>

#include "cria/core/error.h"
#include "cria/sampling/options.h"

namespace cria::sampling {
namespace {

SamplingParams parse(std::initializer_list<std::pair<const char*, const char*>> flags) {
    SamplingFlagState st;
    for (const auto& [flag, value] : flags) apply_option(st, flag, value);
    return st.params;
}

TEST(SamplingOptions, DefaultsAreLlamaCpps) {
    const SamplingParams d;
    EXPECT_FLOAT_EQ(d.temp, 0.8f);
    EXPECT_EQ(d.top_k, 40);
    EXPECT_FLOAT_EQ(d.top_p, 0.95f);
    EXPECT_FLOAT_EQ(d.min_p, 0.05f);
    EXPECT_EQ(d.penalty_last_n, 64);
    EXPECT_FLOAT_EQ(d.penalty_repeat, 1.0f);
    EXPECT_FLOAT_EQ(d.dry_base, 1.75f);
    EXPECT_EQ(d.dry_allowed_length, 2);
    EXPECT_EQ(d.dry_penalty_last_n, -1);
    EXPECT_FLOAT_EQ(d.xtc_threshold, 0.1f);
    EXPECT_FLOAT_EQ(d.mirostat_tau, 5.0f);
    EXPECT_FLOAT_EQ(d.mirostat_eta, 0.1f);
    EXPECT_EQ(samplers_to_chars(d.samplers), "edskypmxt");
}

TEST(SamplingOptions, EveryFlagSetsItsParameter) {
    const SamplingParams p = parse({{"--temp", "0.5"},
                                    {"--top-k", "7"},
                                    {"--top-p", "0.9"},
                                    {"--min-p", "0.1"},
                                    {"--top-n-sigma", "1.5"},
                                    {"--xtc-probability", "0.25"},
                                    {"--xtc-threshold", "0.2"},
                                    {"--typical", "0.8"},
                                    {"--repeat-last-n", "-1"},
                                    {"--repeat-penalty", "1.3"},
                                    {"--presence-penalty", "0.4"},
                                    {"--frequency-penalty", "0.6"},
                                    {"--dry-multiplier", "0.8"},
                                    {"--dry-base", "2"},
                                    {"--dry-allowed-length", "3"},
                                    {"--dry-penalty-last-n", "128"},
                                    {"--dynatemp-range", "0.3"},
                                    {"--dynatemp-exp", "1.5"},
                                    {"--mirostat", "2"},
                                    {"--mirostat-lr", "0.2"},
                                    {"--mirostat-ent", "4"},
                                    {"-s", "42"},
                                    {"--ignore-eos", ""}});
    EXPECT_FLOAT_EQ(p.temp, 0.5f);
    EXPECT_EQ(p.top_k, 7);
    EXPECT_FLOAT_EQ(p.top_p, 0.9f);
    EXPECT_FLOAT_EQ(p.min_p, 0.1f);
    EXPECT_FLOAT_EQ(p.top_n_sigma, 1.5f);
    EXPECT_FLOAT_EQ(p.xtc_probability, 0.25f);
    EXPECT_FLOAT_EQ(p.xtc_threshold, 0.2f);
    EXPECT_FLOAT_EQ(p.typ_p, 0.8f);
    EXPECT_EQ(p.penalty_last_n, -1);
    EXPECT_FLOAT_EQ(p.penalty_repeat, 1.3f);
    EXPECT_FLOAT_EQ(p.penalty_present, 0.4f);
    EXPECT_FLOAT_EQ(p.penalty_freq, 0.6f);
    EXPECT_FLOAT_EQ(p.dry_multiplier, 0.8f);
    EXPECT_FLOAT_EQ(p.dry_base, 2.0f);
    EXPECT_EQ(p.dry_allowed_length, 3);
    EXPECT_EQ(p.dry_penalty_last_n, 128);
    EXPECT_FLOAT_EQ(p.dynatemp_range, 0.3f);
    EXPECT_FLOAT_EQ(p.dynatemp_exponent, 1.5f);
    EXPECT_EQ(p.mirostat, 2);
    EXPECT_FLOAT_EQ(p.mirostat_eta, 0.2f);
    EXPECT_FLOAT_EQ(p.mirostat_tau, 4.0f);
    EXPECT_EQ(p.seed, 42u);
    EXPECT_TRUE(p.ignore_eos);
    EXPECT_EQ(parse({{"--seed", "-1"}}).seed, kRandomSeed);
    EXPECT_EQ(parse({{"--seed", "4294967294"}}).seed, 4294967294u);
}

TEST(SamplingOptions, SamplerOrderByNamesOrLetters) {
    EXPECT_EQ(samplers_to_chars(parse({{"--samplers", "top_k;temperature"}}).samplers), "kt");
    EXPECT_EQ(samplers_to_chars(parse({{"--samplers", "top-p;typical;temp"}}).samplers), "pyt");
    EXPECT_EQ(samplers_to_chars(parse({{"--sampling-seq", "emt"}}).samplers), "emt");
    EXPECT_THROW(parse({{"--samplers", "top_k;nonsense"}}), Error);
    EXPECT_THROW(parse({{"--sampling-seq", "kz"}}), Error);
}

TEST(SamplingOptions, DrySequenceBreakersReplaceTheDefaultsThenAdd) {
    SamplingFlagState st;
    apply_option(st, "--dry-sequence-breaker", "\n\n");
    apply_option(st, "--dry-sequence-breaker", "END");
    EXPECT_EQ(st.params.dry_sequence_breakers, (std::vector<std::string>{"\n\n", "END"}));
    apply_option(st, "--dry-sequence-breaker", "none");
    EXPECT_TRUE(st.params.dry_sequence_breakers.empty());
}

TEST(SamplingOptions, LogitBiasAsLlamaCppWritesIt) {
    const SamplingParams p = parse({{"--logit-bias", "15043+1"}, {"-l", "7-0.5"}, {"-l", "9-inf"}, {"-l", "3+2e1"}});
    ASSERT_EQ(p.logit_bias.size(), 4u);
    EXPECT_EQ(p.logit_bias[0].token, 15043);
    EXPECT_FLOAT_EQ(p.logit_bias[0].bias, 1.0f);
    EXPECT_EQ(p.logit_bias[1].token, 7);
    EXPECT_FLOAT_EQ(p.logit_bias[1].bias, -0.5f);
    EXPECT_TRUE(std::isinf(p.logit_bias[2].bias) && p.logit_bias[2].bias < 0);
    EXPECT_FLOAT_EQ(p.logit_bias[3].bias, 20.0f);
    for (const char* bad : {"15043", "+1", "15043*1", "15043+", "15043+x", "15043+-1", "-5+1", "abc"})
        EXPECT_THROW(parse_logit_bias(bad), Error) << bad;
}

TEST(SamplingOptions, BadValuesAreErrorsNamingTheFlag) {
    auto message = [](const char* flag, const char* value) {
        try {
            parse({{flag, value}});
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message("--temp", "hot").find("--temp"), std::string::npos);
    EXPECT_NE(message("--top-k", "1.5").find("--top-k"), std::string::npos);
    EXPECT_NE(message("--repeat-last-n", "-2").find("--repeat-last-n"), std::string::npos);
    EXPECT_NE(message("--dry-penalty-last-n", "-5").find("--dry-penalty-last-n"), std::string::npos);
    EXPECT_NE(message("--dry-base", "0.5").find("--dry-base"), std::string::npos);
    EXPECT_NE(message("--mirostat", "3").find("--mirostat"), std::string::npos);
    EXPECT_NE(message("--top-p", "nan").find("--top-p"), std::string::npos);
    EXPECT_NE(message("--seed", "4294967296").find("--seed"), std::string::npos);
    EXPECT_NE(message("--no-such-flag", "1").find("unknown sampling flag"), std::string::npos);
}

// Greedy (--temp 0) over a 4-token vocabulary with logits 2.0 1.9 1.0 0.5
// after the prompt 0 0 2: which token wins under each flag, by hand.
TokenId greedy(std::initializer_list<std::pair<const char*, const char*>> flags) {
    SamplingFlagState st;
    apply_option(st, "--temp", "0");
    for (const auto& [flag, value] : flags) apply_option(st, flag, value);
    ChainContext cc;
    cc.n_vocab = 4;
    cc.n_ctx = 16;
    cc.n_ctx_train = 16;
    Chain chain = build_chain(st.params, cc);
    for (TokenId t : {0, 0, 2}) chain.accept_prompt(t);
    const std::vector<float> logits = {2.0f, 1.9f, 1.0f, 0.5f};
    return chain.sample(logits);
}

TEST(SamplingOptions, GreedyPicksMatchLlamaCppsSamplersByHand) {
    EXPECT_EQ(greedy({}), 0);
    // repeat 1.1: token 0 (seen) 2.0 / 1.1 = 1.82 < 1.9
    EXPECT_EQ(greedy({{"--repeat-penalty", "1.1"}}), 1);
    // ... but with --repeat-last-n 1 only the last token (2) is penalised
    EXPECT_EQ(greedy({{"--repeat-penalty", "1.1"}, {"--repeat-last-n", "1"}}), 0);
    // ... and --repeat-last-n 0 turns the penalties off
    EXPECT_EQ(greedy({{"--repeat-penalty", "1.1"}, {"--repeat-last-n", "0"}}), 0);
    // frequency 0.06: 2.0 - 2 * 0.06 = 1.88 < 1.9 (seen twice); 0.04: 1.92 > 1.9
    EXPECT_EQ(greedy({{"--frequency-penalty", "0.06"}}), 1);
    EXPECT_EQ(greedy({{"--frequency-penalty", "0.04"}}), 0);
    // presence 0.15: 2.0 - 0.15 = 1.85 < 1.9 (once, however often seen); 0.05: 1.95
    EXPECT_EQ(greedy({{"--presence-penalty", "0.15"}}), 1);
    EXPECT_EQ(greedy({{"--presence-penalty", "0.05"}}), 0);
    // logit bias: 1.9 + 0.2 = 2.1 > 2.0; banning 0 leaves 1; a bias on 3 of 1.6 makes 2.1
    EXPECT_EQ(greedy({{"--logit-bias", "1+0.2"}}), 1);
    EXPECT_EQ(greedy({{"-l", "0-inf"}}), 1);
    EXPECT_EQ(greedy({{"-l", "3+1.6"}}), 3);
    // bias comes before the penalties: 0 gets +0.1 (2.1), then / 1.1 = 1.909 > 1.9
    EXPECT_EQ(greedy({{"-l", "0+0.1"}, {"--repeat-penalty", "1.1"}}), 0);
    // a negative seen logit is multiplied: 2 gets -3 (-2.0), * 2 = -4; unseen 3 stays the best of the rest
    EXPECT_EQ(greedy({{"-l", "0-inf"}, {"-l", "1-inf"}, {"-l", "2-3"}, {"--repeat-penalty", "2"}}), 3);
}

}  // namespace
}  // namespace cria::sampling
