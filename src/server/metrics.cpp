#include "metrics.h"

#include <functional>
#include <sstream>

namespace cria::server {

namespace {

// A family's HELP and TYPE once, then one sample per model (labelled
// model="NAME" when `labelled`: router mode, where one scrape covers every
// loaded model).
struct Families {
    std::ostringstream& out;
    const std::vector<ModelStats>& models;
    bool labelled;

    std::string label(const ModelStats& m, const std::string& extra = {}) const {
        std::string inner = labelled ? "model=\"" + escaped(m.name) + "\"" : std::string();
        if (!extra.empty()) inner += (inner.empty() ? "" : ",") + extra;
        return inner.empty() ? std::string() : "{" + inner + "}";
    }
    static std::string escaped(const std::string& v) {
        std::string e;
        for (char c : v) {
            if (c == '\\' || c == '"') e += '\\';
            if (c == '\n') {
                e += "\\n";
                continue;
            }
            e += c;
        }
        return e;
    }
    void head(const char* name, const char* type, const char* help) const {
        out << "# HELP cria:" << name << ' ' << help << "\n# TYPE cria:" << name << ' ' << type << '\n';
    }
    void metric(const char* name, const char* type, const char* help,
                const std::function<double(const SchedulerStats&)>& value) const {
        head(name, type, help);
        for (const ModelStats& m : models) out << "cria:" << name << label(m) << ' ' << value(m.stats) << '\n';
    }
    // One counter per draft position, labelled position="i" (0: the first draft token).
    void positions(const char* name, const char* help,
                   const std::function<const std::vector<uint64_t>&(const SchedulerStats&)>& values) const {
        head(name, "counter", help);
        for (const ModelStats& m : models) {
            const std::vector<uint64_t>& v = values(m.stats);
            for (size_t i = 0; i < v.size(); ++i)
                out << "cria:" << name << label(m, "position=\"" + std::to_string(i) + "\"") << ' '
                    << static_cast<double>(v[i]) << '\n';
        }
    }
};

double per(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

std::string metrics_text(const SchedulerStats& stats, uint64_t http_requests) {
    return metrics_text(std::vector<ModelStats>{{"", stats}}, http_requests, false);
}

std::string metrics_text(const std::vector<ModelStats>& models, uint64_t http_requests, bool labelled) {
    std::ostringstream out;
    out.precision(10);
    out << "# HELP cria:http_requests_total HTTP requests received.\n# TYPE cria:http_requests_total counter\n"
        << "cria:http_requests_total " << static_cast<double>(http_requests) << '\n';
    const Families f{out, models, labelled};
    using S = SchedulerStats;
    auto d = [](auto v) { return static_cast<double>(v); };
    f.metric("requests_total", "counter", "Generation requests accepted.", [&](const S& s) { return d(s.requests_total); });
    f.metric("requests_success_total", "counter", "Generation requests completed.", [&](const S& s) { return d(s.requests_success); });
    f.metric("requests_cancelled_total", "counter", "Generation requests cancelled (client gone).", [&](const S& s) { return d(s.requests_cancelled); });
    f.metric("requests_failed_total", "counter", "Generation requests that failed or timed out.", [&](const S& s) { return d(s.requests_failed); });
    f.metric("prompt_tokens_total", "counter", "Prompt tokens evaluated.", [&](const S& s) { return d(s.prompt_tokens_total); });
    f.metric("prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.", [&](const S& s) { return d(s.cached_tokens_total); });
    f.metric("prompt_seconds_total", "counter", "Time spent on prompts.", [](const S& s) { return s.prompt_seconds_total; });
    f.metric("tokens_predicted_total", "counter", "Tokens generated.", [&](const S& s) { return d(s.generated_tokens_total); });
    f.metric("tokens_predicted_seconds_total", "counter", "Time spent generating (summed over requests).",
             [](const S& s) { return s.generation_seconds_total; });
    f.metric("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
             [&](const S& s) { return per(d(s.prompt_tokens_total), s.prompt_seconds_total); });
    f.metric("predicted_tokens_seconds", "gauge", "Average generation throughput per request in tokens/s.",
             [&](const S& s) { return per(d(s.generated_tokens_total), s.generation_seconds_total); });
    f.metric("n_decode_total", "counter", "decode() calls (batches).", [&](const S& s) { return d(s.decode_calls); });
    f.metric("spec_tokens_drafted_total", "counter", "Speculative decoding: tokens drafted.", [&](const S& s) { return d(s.spec_drafted_total); });
    f.metric("spec_tokens_accepted_total", "counter", "Speculative decoding: drafted tokens the model accepted.",
             [&](const S& s) { return d(s.spec_accepted_total); });
    f.metric("spec_acceptance_rate", "gauge", "Speculative decoding: accepted / drafted tokens (0 before any draft).",
             [&](const S& s) { return per(d(s.spec_accepted_total), d(s.spec_drafted_total)); });
    f.metric("spec_verify_steps_total", "counter", "Speculative decoding: slot steps that verified a draft.",
             [&](const S& s) { return d(s.spec_verify_steps); });
    f.metric("turn_checkpoints", "gauge", "Recurrent and hybrid models: saved turn-end states kept.",
             [&](const S& s) { return d(s.turn_checkpoints); });
    f.metric("turn_checkpoint_bytes", "gauge", "Recurrent and hybrid models: bytes of the kept turn-end states.",
             [&](const S& s) { return d(s.turn_checkpoint_bytes); });
    f.metric("turn_checkpoint_hits_total", "counter", "Recurrent and hybrid models: prompts resumed from a turn-end state.",
             [&](const S& s) { return d(s.turn_checkpoint_hits_total); });
    f.metric("spec_mean_acceptance_length", "gauge",
             "Speculative decoding: tokens per verify step (accepted drafts + the target's own; 0 before any).",
             [&](const S& s) { return per(d(s.spec_accepted_total + s.spec_verify_steps), d(s.spec_verify_steps)); });
    f.positions("spec_position_drafted_total", "Speculative decoding: draft tokens at this draft position.",
                [](const S& s) -> const std::vector<uint64_t>& { return s.spec_position_drafted; });
    f.positions("spec_position_accepted_total", "Speculative decoding: draft tokens at this draft position the model accepted.",
                [](const S& s) -> const std::vector<uint64_t>& { return s.spec_position_accepted; });
    f.metric("requests_processing", "gauge", "Slots busy.", [&](const S& s) { return d(s.slots_busy); });
    f.metric("requests_deferred", "gauge", "Requests waiting in the queue.", [&](const S& s) { return d(s.queue_size); });
    f.metric("slots_total", "gauge", "Slots.", [&](const S& s) { return d(s.slots_total); });
    f.metric("prompt_cache_entries", "gauge", "Prompt cache (--cache-ram): prompts kept.", [&](const S& s) { return d(s.prompt_cache_entries); });
    f.metric("prompt_cache_bytes", "gauge", "Prompt cache: bytes of state kept.", [&](const S& s) { return d(s.prompt_cache_bytes); });
    f.metric("prompt_cache_hits_total", "counter", "Prompt cache: requests that loaded a kept prompt.",
             [&](const S& s) { return d(s.prompt_cache_hits); });
    f.metric("prompt_cache_tokens_total", "counter", "Prompt cache: prompt tokens loaded instead of evaluated.",
             [&](const S& s) { return d(s.prompt_cache_tokens); });
    return out.str();
}

}  // namespace cria::server
