#pragma once
// GET /metrics in the Prometheus text exposition format (version 0.0.4),
// with llama-server's metric names under cria's prefix.
#include <cstdint>
#include <string>
#include <vector>

#include "cria/server/scheduler.h"

namespace cria::server {

std::string metrics_text(const SchedulerStats& stats, uint64_t http_requests);

// Router mode: one scrape for every loaded model, each family's samples
// labelled model="NAME" when `labelled` (http_requests_total is the
// server's, unlabelled).
struct ModelStats {
    std::string name;
    SchedulerStats stats;
};
std::string metrics_text(const std::vector<ModelStats>& models, uint64_t http_requests, bool labelled);

}  // namespace cria::server
