#pragma once
// What speculation did, per drafter and in total: drafts and tokens
// generated and accepted, acceptance per draft position, mean acceptance
// length, and where the time went.

#include <cstdint>
#include <string>
#include <vector>

namespace cria::spec {

struct DrafterMetrics {
    std::string name;
    int64_t n_calls = 0;            // draft() calls
    int64_t n_drafts = 0;           // non-empty drafts verified
    int64_t n_drafts_accepted = 0;  // drafts with at least one token accepted
    int64_t n_tokens_drafted = 0;
    int64_t n_tokens_accepted = 0;
    std::vector<int64_t> position_tried;     // [i]: drafts that had a token at position i
    std::vector<int64_t> position_accepted;  // [i]: ... and the target accepted it
    double draft_ms = 0;

    double acceptance_rate() const;  // accepted / drafted tokens (0 when none)
};

struct Metrics {
    std::vector<DrafterMetrics> drafters;
    int64_t n_verify_steps = 0;     // target decodes with a draft
    int64_t n_plain_steps = 0;      // target decodes of one token (nothing drafted, or paused)
    int64_t n_paused_steps = 0;     // plain steps because adaptive drafting paused
    int64_t n_tokens_generated = 0;
    double draft_ms = 0, verify_ms = 0, plain_ms = 0, prompt_ms = 0;

    int64_t tokens_drafted() const;
    int64_t tokens_accepted() const;
    double acceptance_rate() const;
    // Tokens gained per verify step: accepted drafts + the target's own token.
    double mean_acceptance_length() const;
    // Human-readable lines, as llama.cpp's "statistics <name>: ..." plus ours.
    std::string format() const;
};

}  // namespace cria::spec
