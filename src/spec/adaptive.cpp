// Adaptive drafting: draft as many tokens as pay, or none (see adaptive.h).

#include "cria/spec/adaptive.h"

#include <algorithm>

namespace cria::spec {

namespace {
constexpr double kEmaWeight = 0.25;   // weight of a new cost measurement
constexpr double kDecay = 0.95;       // per observation of a draft position: ~20 recent drafts count
constexpr double kMargin = 1.03;      // drafting must promise 3% more tokens/s than plain decoding
constexpr int kMinProbe = 8, kMaxProbe = 64, kMaxProbeLen = 16;
// A failed probe's extra time (drafting plus the larger verify, less the
// tokens it won) may cost at most this share of the plain decoding between
// two probes; a dear drafter (a draft model that must first catch up on the
// tokens since its last draft) is therefore probed more rarely than kMaxProbe.
constexpr double kProbeBudget = 0.02;
constexpr int kMaxDearProbe = 1024;
}  // namespace

void DecodeCostModel::observe(int n_tokens, double ms) {
    if (n_tokens < 1 || n_tokens > kMaxTokens || !(ms > 0.0)) return;
    double& e = ema_[static_cast<size_t>(n_tokens)];
    e = e == 0.0 ? ms : (1.0 - kEmaWeight) * e + kEmaWeight * ms;
}

bool DecodeCostModel::measured(int n_tokens) const {
    return n_tokens >= 1 && n_tokens <= kMaxTokens && ema_[static_cast<size_t>(n_tokens)] > 0.0;
}

double DecodeCostModel::cost(int n_tokens) const {
    n_tokens = std::clamp(n_tokens, 1, kMaxTokens);
    if (measured(n_tokens)) {
        // A larger batch never costs less than a smaller one: timing noise
        // must not make verification look free.
        double floor = 0.0;
        for (int k = 1; k < n_tokens; ++k)
            if (measured(k)) floor = std::max(floor, ema_[static_cast<size_t>(k)]);
        return std::max(ema_[static_cast<size_t>(n_tokens)], floor);
    }
    int below = 0, above = 0;
    for (int k = n_tokens - 1; k >= 1 && below == 0; --k)
        if (measured(k)) below = k;
    for (int k = n_tokens + 1; k <= kMaxTokens && above == 0; ++k)
        if (measured(k)) above = k;
    const auto at = [&](int k) { return ema_[static_cast<size_t>(k)]; };
    if (below && above)
        return at(below) + (at(above) - at(below)) * (n_tokens - below) / static_cast<double>(above - below);
    if (!below && !above) return 0.0;
    if (!below) return at(above);  // a smaller batch never costs more
    // Extrapolate from the slope between the two largest measured sizes; with
    // one size known, assume the worst: compute-bound, linear in the tokens.
    int second = 0;
    for (int k = below - 1; k >= 1 && second == 0; --k)
        if (measured(k)) second = k;
    double slope = second ? (at(below) - at(second)) / static_cast<double>(below - second) : at(below) / below;
    slope = std::max(slope, 0.0);
    return at(below) + slope * (n_tokens - below);
}

AdaptiveDrafting::AdaptiveDrafting(int n_drafters, bool enabled)
    : enabled_(enabled), state_(static_cast<size_t>(std::max(n_drafters, 0))) {}

double AdaptiveDrafting::acceptance(const State& s, int position) const {
    // A sceptical prior (half an acceptance in two tries) so that one lucky
    // draft does not restart drafting; an unseen position inherits the one before it.
    for (int i = position; i >= 0; --i) {
        const auto k = static_cast<size_t>(i);
        if (k < s.tried.size() && s.tried[k] > 0.0) return (s.accepted[k] + 0.5) / (s.tried[k] + 2.0);
    }
    return 0.25;
}

double AdaptiveDrafting::expected_accepted(int drafter, int n) const {
    const State& s = state_.at(static_cast<size_t>(drafter));
    double e = 0.0, all = 1.0;
    for (int i = 0; i < n; ++i) {
        all *= acceptance(s, i);
        e += all;
    }
    return e;
}

double AdaptiveDrafting::throughput(const State& s, int n) const {
    double e = 0.0, all = 1.0;
    for (int i = 0; i < n; ++i) {
        all *= acceptance(s, i);
        e += all;
    }
    const double ms = costs_.cost(n + 1) + s.ms_per_token * n;
    return ms > 0.0 ? (1.0 + e) / ms : 0.0;
}

int AdaptiveDrafting::limit(int drafter, int n_allowed) {
    if (n_allowed <= 0) return 0;
    if (!enabled_) return n_allowed;
    State& s = state_.at(static_cast<size_t>(drafter));
    // Without the cost of a plain step nothing can be compared: measure it first.
    if (!costs_.measured(1)) return 0;
    if (s.paused) {
        if (++s.since_probe < s.probe_interval) return 0;
        s.probing = true;
        // Slow start: one token, doubled after every fully accepted probe.
        return std::min(s.probe_len, n_allowed);
    }
    const double plain = throughput(s, 0);
    int best = 0;
    double best_rate = plain * kMargin;
    for (int n = 1; n <= n_allowed; ++n) {
        const double rate = throughput(s, n);
        if (rate > best_rate) {
            best_rate = rate;
            best = n;
        }
    }
    if (best == 0) {
        s.paused = true;
        s.since_probe = 0;
        s.probe_len = 1;
        s.probe_interval = std::min(s.probe_interval * 2, kMaxProbe);
    }
    return best;
}

void AdaptiveDrafting::observe_draft(int drafter, int n_drafted, int n_accepted, double draft_ms) {
    State& s = state_.at(static_cast<size_t>(drafter));
    if (n_drafted > 0) {
        const double per_token = draft_ms / n_drafted;
        s.ms_per_token = s.ms_per_token == 0.0 ? per_token : (1.0 - kEmaWeight) * s.ms_per_token + kEmaWeight * per_token;
    }
    // Position i was tried when all positions before it were accepted.
    const int tried = std::min(n_drafted, n_accepted + 1);
    if (static_cast<int>(s.tried.size()) < n_drafted) {
        s.tried.resize(static_cast<size_t>(n_drafted), 0.0);
        s.accepted.resize(static_cast<size_t>(n_drafted), 0.0);
    }
    for (int i = 0; i < tried; ++i) {
        const auto k = static_cast<size_t>(i);
        s.tried[k] = s.tried[k] * kDecay + 1.0;
        s.accepted[k] = s.accepted[k] * kDecay + (i < n_accepted ? 1.0 : 0.0);
    }
    if (s.probing) {
        s.probing = false;
        s.since_probe = 0;
        // Resume when the evidence now says drafting pays; else probe less often.
        const double plain = throughput(s, 0);
        bool pays = false;
        for (int n = 1; n <= kMaxProbeLen && !pays; ++n) pays = throughput(s, n) > plain * kMargin;
        if (pays) {
            // Resume, but a drafter that keeps pausing again waits longer
            // (the interval only shrinks slowly).
            s.paused = false;
            s.probe_interval = std::max(kMinProbe, s.probe_interval / 2);
            s.probe_len = 1;
        } else if (n_accepted == n_drafted) {
            // All accepted but not yet convincing: probe again at once, longer,
            // which also measures the cost of a larger verify batch.
            s.probe_len = std::min(s.probe_len * 2, kMaxProbeLen);
            s.since_probe = s.probe_interval;
        } else {
            s.probe_len = 1;
            s.probe_interval = std::min(s.probe_interval * 2, kMaxProbe);
            const double plain_ms = costs_.cost(1);
            const double lost_ms =
                draft_ms + costs_.cost(n_drafted + 1) - plain_ms - static_cast<double>(n_accepted) * plain_ms;
            if (plain_ms > 0.0 && lost_ms > 0.0) {
                const double steps = lost_ms / (kProbeBudget * plain_ms);
                s.probe_interval = std::max(s.probe_interval, static_cast<int>(std::min<double>(steps, kMaxDearProbe)));
            }
        }
    }
}

void AdaptiveDrafting::observe_plain_step() {
    // A probe that drafted nothing gives no evidence: try again next step
    // (drafters without a match cost next to nothing).
    for (auto& s : state_)
        if (s.probing) {
            s.probing = false;
            s.since_probe = s.probe_interval;
        }
}

}  // namespace cria::spec
