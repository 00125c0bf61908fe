#pragma once
// Adaptive drafting: decides, before every step, how many tokens a drafter
// may propose, from what the current request has shown so far:
//
//   c(k)   the time of a target decode of k tokens (measured, moving average;
//          unmeasured sizes interpolated, or extrapolated from the largest
//          measured slope; with only c(1) known, pessimistically c(k) = k c(1)),
//   a_i    how often draft position i is accepted when positions < i were
//          (decayed counts, so the estimate follows the text),
//   d(n)   the drafting time of n tokens (per drafter, per token).
//
// A step with a draft of n tokens yields 1 + E(n) tokens, E(n) = sum_j prod_{i<=j} a_i,
// in c(n+1) + d(n); a plain step yields 1 token in c(1). The controller picks
// the n with the best tokens per second and drafts nothing when no n beats
// plain decoding by a small margin. A paused drafter is probed at growing
// intervals (8 .. 64 steps, longer for a dear drafter: a failed probe may cost
// at most 2% of the plain decoding time between probes) with a one-token
// draft; a fully accepted probe is
// followed at once by one twice as long (slow start, up to 16), which also
// measures larger verify batches. So drafting resumes quickly where the text
// repeats, and costs little where it does not.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cria::spec {

class DecodeCostModel {
public:
    static constexpr int kMaxTokens = 256;
    void observe(int n_tokens, double ms);
    bool measured(int n_tokens) const;
    double cost(int n_tokens) const;  // ms; 0 when nothing is known

private:
    std::vector<double> ema_ = std::vector<double>(kMaxTokens + 1, 0.0);
};

class AdaptiveDrafting {
public:
    AdaptiveDrafting(int n_drafters, bool enabled);

    // The most tokens drafter d may draft this step (0: skip it), given the
    // largest draft the batch, context and request allow.
    int limit(int drafter, int n_allowed);
    // Feedback: a target decode of n_tokens took ms.
    void observe_decode(int n_tokens, double ms) { costs_.observe(n_tokens, ms); }
    // Feedback: drafter d drafted n tokens in draft_ms, the target accepted n_accepted.
    void observe_draft(int drafter, int n_drafted, int n_accepted, double draft_ms);
    // Nothing was verified this step (a plain decode).
    void observe_plain_step();

    bool paused(int drafter) const { return state_.at(static_cast<size_t>(drafter)).paused; }
    double expected_accepted(int drafter, int n) const;  // E(n)
    const DecodeCostModel& costs() const { return costs_; }

private:
    struct State {
        std::vector<double> tried, accepted;  // decayed counts per position
        double ms_per_token = 0;              // drafting time per drafted token (moving average)
        bool paused = true;       // every drafter starts by probing
        int probe_interval = 8;
        int since_probe = 8;      // the first probe comes at once
        int probe_len = 1;
        bool probing = false;
    };
    double acceptance(const State& s, int position) const;
    double throughput(const State& s, int n) const;

    bool enabled_;
    DecodeCostModel costs_;
    std::vector<State> state_;
};

}  // namespace cria::spec
