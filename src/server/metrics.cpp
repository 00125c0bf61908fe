#include "metrics.h"

#include <sstream>

namespace cria::server {

namespace {

void metric(std::ostringstream& out, const char* name, const char* type, const char* help, double value) {
    out << "# HELP cria:" << name << ' ' << help << "\n# TYPE cria:" << name << ' ' << type << "\ncria:" << name << ' '
        << value << '\n';
}

// One counter per draft position, labelled position="i" (0: the first draft token).
void position_metric(std::ostringstream& out, const char* name, const char* help, const std::vector<uint64_t>& values) {
    out << "# HELP cria:" << name << ' ' << help << "\n# TYPE cria:" << name << " counter\n";
    for (size_t i = 0; i < values.size(); ++i)
        out << "cria:" << name << "{position=\"" << i << "\"} " << static_cast<double>(values[i]) << '\n';
}

}  // namespace

std::string metrics_text(const SchedulerStats& s, uint64_t http_requests) {
    std::ostringstream out;
    out.precision(10);
    metric(out, "http_requests_total", "counter", "HTTP requests received.", static_cast<double>(http_requests));
    metric(out, "requests_total", "counter", "Generation requests accepted.", static_cast<double>(s.requests_total));
    metric(out, "requests_success_total", "counter", "Generation requests completed.", static_cast<double>(s.requests_success));
    metric(out, "requests_cancelled_total", "counter", "Generation requests cancelled (client gone).", static_cast<double>(s.requests_cancelled));
    metric(out, "requests_failed_total", "counter", "Generation requests that failed or timed out.", static_cast<double>(s.requests_failed));
    metric(out, "prompt_tokens_total", "counter", "Prompt tokens evaluated.", static_cast<double>(s.prompt_tokens_total));
    metric(out, "prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.", static_cast<double>(s.cached_tokens_total));
    metric(out, "prompt_seconds_total", "counter", "Time spent on prompts.", s.prompt_seconds_total);
    metric(out, "tokens_predicted_total", "counter", "Tokens generated.", static_cast<double>(s.generated_tokens_total));
    metric(out, "tokens_predicted_seconds_total", "counter", "Time spent generating (summed over requests).", s.generation_seconds_total);
    metric(out, "prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
           s.prompt_seconds_total > 0 ? static_cast<double>(s.prompt_tokens_total) / s.prompt_seconds_total : 0.0);
    metric(out, "predicted_tokens_seconds", "gauge", "Average generation throughput per request in tokens/s.",
           s.generation_seconds_total > 0 ? static_cast<double>(s.generated_tokens_total) / s.generation_seconds_total : 0.0);
    metric(out, "n_decode_total", "counter", "decode() calls (batches).", static_cast<double>(s.decode_calls));
    metric(out, "spec_tokens_drafted_total", "counter", "Speculative decoding: tokens drafted.", static_cast<double>(s.spec_drafted_total));
    metric(out, "spec_tokens_accepted_total", "counter", "Speculative decoding: drafted tokens the model accepted.",
           static_cast<double>(s.spec_accepted_total));
    metric(out, "spec_acceptance_rate", "gauge", "Speculative decoding: accepted / drafted tokens (0 before any draft).",
           s.spec_drafted_total > 0 ? static_cast<double>(s.spec_accepted_total) / static_cast<double>(s.spec_drafted_total) : 0.0);
    metric(out, "spec_verify_steps_total", "counter", "Speculative decoding: slot steps that verified a draft.",
           static_cast<double>(s.spec_verify_steps));
    metric(out, "turn_checkpoints", "gauge", "Recurrent and hybrid models: saved turn-end states kept.",
           static_cast<double>(s.turn_checkpoints));
    metric(out, "turn_checkpoint_bytes", "gauge", "Recurrent and hybrid models: bytes of the kept turn-end states.",
           static_cast<double>(s.turn_checkpoint_bytes));
    metric(out, "turn_checkpoint_hits_total", "counter", "Recurrent and hybrid models: prompts resumed from a turn-end state.",
           static_cast<double>(s.turn_checkpoint_hits_total));
    metric(out, "spec_mean_acceptance_length", "gauge",
           "Speculative decoding: tokens per verify step (accepted drafts + the target's own; 0 before any).",
           s.spec_verify_steps > 0
               ? static_cast<double>(s.spec_accepted_total + s.spec_verify_steps) / static_cast<double>(s.spec_verify_steps)
               : 0.0);
    position_metric(out, "spec_position_drafted_total", "Speculative decoding: draft tokens at this draft position.",
                    s.spec_position_drafted);
    position_metric(out, "spec_position_accepted_total",
                    "Speculative decoding: draft tokens at this draft position the model accepted.",
                    s.spec_position_accepted);
    metric(out, "requests_processing", "gauge", "Slots busy.", s.slots_busy);
    metric(out, "requests_deferred", "gauge", "Requests waiting in the queue.", s.queue_size);
    metric(out, "slots_total", "gauge", "Slots.", s.slots_total);
    metric(out, "prompt_cache_entries", "gauge", "Prompt cache (--cache-ram): prompts kept.", static_cast<double>(s.prompt_cache_entries));
    metric(out, "prompt_cache_bytes", "gauge", "Prompt cache: bytes of state kept.", static_cast<double>(s.prompt_cache_bytes));
    metric(out, "prompt_cache_hits_total", "counter", "Prompt cache: requests that loaded a kept prompt.",
           static_cast<double>(s.prompt_cache_hits));
    metric(out, "prompt_cache_tokens_total", "counter", "Prompt cache: prompt tokens loaded instead of evaluated.",
           static_cast<double>(s.prompt_cache_tokens));
    return out.str();
}

}  // namespace cria::server
