// Speculation metrics and their printout.

#include "cria/spec/metrics.h"

#include <cstdio>

namespace cria::spec {

double DrafterMetrics::acceptance_rate() const {
    return n_tokens_drafted ? static_cast<double>(n_tokens_accepted) / static_cast<double>(n_tokens_drafted) : 0.0;
}

int64_t Metrics::tokens_drafted() const {
    int64_t n = 0;
    for (const auto& d : drafters) n += d.n_tokens_drafted;
    return n;
}

int64_t Metrics::tokens_accepted() const {
    int64_t n = 0;
    for (const auto& d : drafters) n += d.n_tokens_accepted;
    return n;
}

double Metrics::acceptance_rate() const {
    const int64_t drafted = tokens_drafted();
    return drafted ? static_cast<double>(tokens_accepted()) / static_cast<double>(drafted) : 0.0;
}

double Metrics::mean_acceptance_length() const {
    return n_verify_steps ? static_cast<double>(tokens_accepted() + n_verify_steps) / static_cast<double>(n_verify_steps)
                          : 0.0;
}

std::string Metrics::format() const {
    std::string out;
    char line[512];
    // llama-speculative-simple's summary lines.
    std::snprintf(line, sizeof line, "n_drafted = %lld\nn_accept  = %lld\naccept    = %.3f%%\n",
                  static_cast<long long>(tokens_drafted()), static_cast<long long>(tokens_accepted()),
                  100.0 * acceptance_rate());
    out += line;
    std::snprintf(line, sizeof line, "draft acceptance rate = %.5f (%5lld accepted / %5lld generated)\n",
                  acceptance_rate(), static_cast<long long>(tokens_accepted()), static_cast<long long>(tokens_drafted()));
    out += line;
    for (const auto& d : drafters) {
        std::snprintf(line, sizeof line,
                      "statistics %s: #calls = %lld, #gen drafts = %lld, #acc drafts = %lld, #gen tokens = %lld, "
                      "#acc tokens = %lld, draft time = %.3f ms\n",
                      d.name.c_str(), static_cast<long long>(d.n_calls), static_cast<long long>(d.n_drafts),
                      static_cast<long long>(d.n_drafts_accepted), static_cast<long long>(d.n_tokens_drafted),
                      static_cast<long long>(d.n_tokens_accepted), d.draft_ms);
        out += line;
        if (!d.position_tried.empty()) {
            out += "  acceptance per position:";
            for (size_t i = 0; i < d.position_tried.size() && i < 16; ++i) {
                std::snprintf(line, sizeof line, " %zu:%.2f", i + 1,
                              d.position_tried[i] ? static_cast<double>(d.position_accepted[i]) /
                                                        static_cast<double>(d.position_tried[i])
                                                  : 0.0);
                out += line;
            }
            out += "\n";
            // llama.cpp's definitions: 1 + accepted / drafts, and for each
            // position the share of drafts with more than i tokens accepted
            // (up to the longest run accepted).
            size_t n_pos = d.position_accepted.size();
            while (n_pos > 0 && d.position_accepted[n_pos - 1] == 0) --n_pos;
            std::snprintf(line, sizeof line, "  #mean acc len = %.2f, #acc rate/pos = (",
                          d.n_drafts ? 1.0 + static_cast<double>(d.n_tokens_accepted) / static_cast<double>(d.n_drafts)
                                     : 0.0);
            out += line;
            for (size_t i = 0; i < n_pos; ++i) {
                std::snprintf(line, sizeof line, "%s%.3f", i ? ", " : "",
                              static_cast<double>(d.position_accepted[i]) / static_cast<double>(d.n_drafts));
                out += line;
            }
            out += ")\n";
        }
    }
    std::snprintf(line, sizeof line,
                  "speculation: %lld tokens, %lld verify steps (mean acceptance length %.3f), %lld plain steps "
                  "(%lld paused by adaptive drafting); draft %.2f ms, verify %.2f ms, plain %.2f ms\n",
                  static_cast<long long>(n_tokens_generated), static_cast<long long>(n_verify_steps),
                  mean_acceptance_length(), static_cast<long long>(n_plain_steps),
                  static_cast<long long>(n_paused_steps), draft_ms, verify_ms, plain_ms);
    out += line;
    return out;
}

}  // namespace cria::spec
