// llama-server's sampling fields in request bodies: each sets its parameter,
// what a request leaves out is the server's default (llama.cpp's, or the
// `cria serve` sampling flags), and bad values are 400s naming the field.
#include <gtest/gtest.h>

#include <cmath>

#include "server/api.h"

using namespace cria::server;
using cria::sampling::SamplingParams;

namespace {

SamplingParams sampling_of(const char* body, const SamplingParams& defaults = {}) {
    GenerationRequest gen;
    parse_openai_sampling(json::parse(body), gen, true, defaults);
    return gen.sampling;
}

std::string rejected_field(const char* body) {
    try {
        sampling_of(body);
    } catch (const ApiError& e) {
        return e.status() == 400 ? e.param() : "status " + std::to_string(e.status());
    }
    return "accepted";
}

}  // namespace

// n_keep and n_discard (llama-server's context shift fields) go to the
// request; an absent n_keep stays unset (the server's --keep applies).
TEST(SamplingFields, ContextShiftFieldsReachTheRequest) {
    GenerationRequest gen;
    parse_openai_sampling(json::parse(R"({"n_keep":-1,"n_discard":7})"), gen, true);
    EXPECT_EQ(gen.n_keep, -1);
    EXPECT_EQ(gen.n_discard, 7);
    GenerationRequest none;
    parse_openai_sampling(json::parse(R"({})"), none, true);
    EXPECT_FALSE(none.n_keep.has_value());
    EXPECT_EQ(none.n_discard, 0);
}

TEST(SamplingFields, EveryLlamaServerFieldSetsItsParameter) {
    const SamplingParams s = sampling_of(R"({"temperature":0.5,"top_k":7,"top_p":0.9,"min_p":0.1,"typical_p":0.8,
        "top_n_sigma":1.5,"xtc_probability":0.25,"xtc_threshold":0.2,"dynatemp_range":0.3,"dynatemp_exponent":1.5,
        "repeat_last_n":-1,"repeat_penalty":1.3,"presence_penalty":0.4,"frequency_penalty":0.6,
        "dry_multiplier":0.8,"dry_base":2,"dry_allowed_length":3,"dry_penalty_last_n":128,
        "dry_sequence_breakers":["\n\n","END"],"mirostat":2,"mirostat_tau":4,"mirostat_eta":0.2,"min_keep":2,
        "n_keep":-1,"samplers":["top_k","temperature"],"logit_bias":[[5,1.5],[6,false]],"ignore_eos":true,"seed":9})");
    EXPECT_FLOAT_EQ(s.temp, 0.5f);
    EXPECT_EQ(s.top_k, 7);
    EXPECT_FLOAT_EQ(s.top_p, 0.9f);
    EXPECT_FLOAT_EQ(s.min_p, 0.1f);
    EXPECT_FLOAT_EQ(s.typ_p, 0.8f);
    EXPECT_FLOAT_EQ(s.top_n_sigma, 1.5f);
    EXPECT_FLOAT_EQ(s.xtc_probability, 0.25f);
    EXPECT_FLOAT_EQ(s.xtc_threshold, 0.2f);
    EXPECT_FLOAT_EQ(s.dynatemp_range, 0.3f);
    EXPECT_FLOAT_EQ(s.dynatemp_exponent, 1.5f);
    EXPECT_EQ(s.penalty_last_n, -1);
    EXPECT_FLOAT_EQ(s.penalty_repeat, 1.3f);
    EXPECT_FLOAT_EQ(s.penalty_present, 0.4f);
    EXPECT_FLOAT_EQ(s.penalty_freq, 0.6f);
    EXPECT_FLOAT_EQ(s.dry_multiplier, 0.8f);
    EXPECT_FLOAT_EQ(s.dry_base, 2.0f);
    EXPECT_EQ(s.dry_allowed_length, 3);
    EXPECT_EQ(s.dry_penalty_last_n, 128);
    EXPECT_EQ(s.dry_sequence_breakers, (std::vector<std::string>{"\n\n", "END"}));
    EXPECT_EQ(s.mirostat, 2);
    EXPECT_FLOAT_EQ(s.mirostat_tau, 4.0f);
    EXPECT_FLOAT_EQ(s.mirostat_eta, 0.2f);
    EXPECT_EQ(s.min_keep, 2);
    EXPECT_EQ(cria::sampling::samplers_to_chars(s.samplers), "kt");
    ASSERT_EQ(s.logit_bias.size(), 2u);
    EXPECT_FLOAT_EQ(s.logit_bias[0].bias, 1.5f);
    EXPECT_TRUE(std::isinf(s.logit_bias[1].bias) && s.logit_bias[1].bias < 0);
    EXPECT_TRUE(s.ignore_eos);
    EXPECT_EQ(s.seed, 9u);
    EXPECT_EQ(cria::sampling::samplers_to_chars(sampling_of(R"({"samplers":"emt"})").samplers), "emt");
    EXPECT_FLOAT_EQ(sampling_of(R"({"logit_bias":{"3":-2}})").logit_bias.at(0).bias, -2.0f);
}

TEST(SamplingFields, WhatARequestLeavesOutIsTheServersDefault) {
    const SamplingParams llama = sampling_of("{}");
    EXPECT_FLOAT_EQ(llama.temp, 0.8f);  // llama-server's defaults, not OpenAI's
    EXPECT_EQ(llama.top_k, 40);
    EXPECT_FLOAT_EQ(llama.top_p, 0.95f);
    EXPECT_FLOAT_EQ(llama.min_p, 0.05f);
    SamplingParams flags;  // as `cria serve --temp 0.3 --repeat-penalty 1.2 --dry-multiplier 0.5`
    flags.temp = 0.3f;
    flags.penalty_repeat = 1.2f;
    flags.dry_multiplier = 0.5f;
    const SamplingParams s = sampling_of(R"({"top_k":5})", flags);
    EXPECT_FLOAT_EQ(s.temp, 0.3f);
    EXPECT_FLOAT_EQ(s.penalty_repeat, 1.2f);
    EXPECT_FLOAT_EQ(s.dry_multiplier, 0.5f);
    EXPECT_EQ(s.top_k, 5);
    const ChatJob anthropic = parse_anthropic_messages(
        json::parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}]})"), flags);
    EXPECT_FLOAT_EQ(anthropic.gen.sampling.temp, 0.3f);
}

TEST(SamplingFields, BadValuesAre400sNamingTheField) {
    EXPECT_EQ(rejected_field(R"({"repeat_last_n":-2})"), "repeat_last_n");
    EXPECT_EQ(rejected_field(R"({"dry_penalty_last_n":-3})"), "dry_penalty_last_n");
    EXPECT_EQ(rejected_field(R"({"mirostat":3})"), "mirostat");
    EXPECT_EQ(rejected_field(R"({"dry_base":0.5})"), "dry_base");
    EXPECT_EQ(rejected_field(R"({"typical_p":"x"})"), "typical_p");
    EXPECT_EQ(rejected_field(R"({"dry_sequence_breakers":[]})"), "dry_sequence_breakers");
    EXPECT_EQ(rejected_field(R"({"dry_sequence_breakers":[3]})"), "dry_sequence_breakers");
    EXPECT_EQ(rejected_field(R"({"samplers":["top_k","warp"]})"), "samplers");
    EXPECT_EQ(rejected_field(R"({"samplers":"kz"})"), "samplers");
    EXPECT_EQ(rejected_field(R"({"logit_bias":[[1]]})"), "logit_bias");
    EXPECT_EQ(rejected_field(R"({"logit_bias":{"x":1}})"), "logit_bias");
    EXPECT_EQ(rejected_field(R"({"logit_bias":{"1":true}})"), "logit_bias");
    EXPECT_EQ(rejected_field(R"({"n_keep":-2})"), "n_keep");
    EXPECT_EQ(rejected_field(R"({"n_discard":-1})"), "n_discard");
    EXPECT_EQ(rejected_field(R"({"min_keep":-1})"), "min_keep");
}
