// Speculative decoding in the server: checking a request's settings against
// the server's drafters, each generating slot's speculative step
// (spec/step.h) verifying its rows of the shared decode, and the server's
// speculation counters, which are the steps' spec::Metrics.

#include <algorithm>
#include <span>
#include <string>

#include "cria/core/error.h"
#include "cria/server/scheduler.h"
#include "cria/spec/params.h"
#include "server/scheduler_slot.h"

namespace cria::server {

PositionCounts position_counts(const spec::Metrics& metrics) {
    PositionCounts out;
    for (const spec::DrafterMetrics& d : metrics.drafters) {
        const size_t n = std::max(d.position_tried.size(), d.position_accepted.size());
        if (out.tried.size() < n) {
            out.tried.resize(n, 0);
            out.accepted.resize(n, 0);
        }
        for (size_t i = 0; i < d.position_tried.size(); ++i) out.tried[i] += d.position_tried[i];
        for (size_t i = 0; i < d.position_accepted.size(); ++i) out.accepted[i] += d.position_accepted[i];
    }
    return out;
}

spec::EmbeddingAt image_rows(const std::vector<PromptImage>& cache_images) {
    return [&cache_images](int32_t pos) -> const float* {
        for (const PromptImage& img : cache_images) {
            const auto first = static_cast<int64_t>(img.first);
            if (pos >= first && pos < first + img.image->n_tokens)
                return img.image->embd.data() + (pos - first) * img.image->n_embd;
        }
        return nullptr;
    };
}

namespace {

// Adds what `now` counts beyond `synced` to `total`, and remembers `now`.
void add_new_counts(const std::vector<int64_t>& now, std::vector<int64_t>& synced, std::vector<uint64_t>& total) {
    if (total.size() < now.size()) total.resize(now.size(), 0);
    if (synced.size() < now.size()) synced.resize(now.size(), 0);
    for (size_t i = 0; i < now.size(); ++i) {
        total[i] += static_cast<uint64_t>(now[i] - synced[i]);
        synced[i] = now[i];
    }
}

}  // namespace

void Scheduler::check_speculative(const SpeculativeRequest& r) const {
    if (!r.given || r.n_max == 0 || r.type == "none") return;  // nothing asked, or speculation off
    if (spec_types_.empty())
        throw Error("speculative decoding is off on this server: start it with --spec-type TYPE or -md DRAFT_MODEL");
    if (!r.type.empty()) {
        const std::string type(spec::spec_type_name(spec::parse_spec_type(r.type)));  // throws for an unknown name
        if (std::find(spec_types_.begin(), spec_types_.end(), type) == spec_types_.end()) {
            std::string have;
            for (const auto& t : spec_types_) have += (have.empty() ? "" : ", ") + t;
            throw Error("speculative type '" + type + "' is not enabled on this server (it drafts with " + have + ")");
        }
    }
    if (r.n_min > 0 && r.n_max > 0 && r.n_min > r.n_max) throw Error("speculative n_min must not exceed n_max");
    // p_min reaches the drafters through each step's DraftInput (spec/drafter.h).
}

void Scheduler::verify(Slot& s, const float* rows, size_t first_row, double decode_ms) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    const spec::LogitRow row = [&](int i) {
        return std::span<const float>(rows + static_cast<size_t>(i) * n_vocab, n_vocab);
    };
    // The i-th emitted token follows `last` and i accepted draft tokens.
    const auto n_cached = static_cast<int32_t>(s.cache.size()) + 1;
    int32_t n_emitted = 0;
    const spec::EmitToken emit = [&](TokenId token, std::span<const float> logits) {
        sync_spec_stats(s);  // the Done event and /metrics agree
        return on_token(s, token, logits.data(), n_cached + n_emitted++);
    };
    // The step commits the slot's checkpoint in the backend (opened by prepare()).
    const auto pos = static_cast<int32_t>(s.cache.size());
    try {
        const spec::StepOutcome outcome = s.speculation->finish(row, s.chain, decode_ms, s.cache, emit);
        // The target's streams of the tokens this step kept, for the next draft.
        s.speculation->set_target_features(
            backend_.features(first_row, static_cast<size_t>(outcome.n_accepted) + 1, pos));
    } catch (const std::exception& e) {
        if (s.busy) fail_sampling(s, e);
    }
    sync_spec_stats(s);
}

void Scheduler::sync_spec_stats(Slot& s) {
    const spec::Metrics& m = s.speculation->metrics();
    const int64_t drafted = m.tokens_drafted(), accepted = m.tokens_accepted(), steps = m.n_verify_steps;
    const PositionCounts positions = position_counts(m);
    if (drafted == s.synced_drafted && accepted == s.synced_accepted && steps == s.synced_verify_steps &&
        positions.tried == s.synced_position_tried && positions.accepted == s.synced_position_accepted)
        return;
    std::lock_guard lock(mutex_);
    add_new_counts(positions.tried, s.synced_position_tried, stats_.spec_position_drafted);
    add_new_counts(positions.accepted, s.synced_position_accepted, stats_.spec_position_accepted);
    stats_.spec_drafted_total += static_cast<uint64_t>(drafted - s.synced_drafted);
    stats_.spec_accepted_total += static_cast<uint64_t>(accepted - s.synced_accepted);
    stats_.spec_verify_steps += static_cast<uint64_t>(steps - s.synced_verify_steps);
    s.synced_drafted = drafted;
    s.synced_accepted = accepted;
    s.synced_verify_steps = steps;
}

}  // namespace cria::server
