#pragma once
// GET /metrics in the Prometheus text exposition format (version 0.0.4).
#include <cstdint>
#include <string>

#include "cria/server/scheduler.h"

namespace cria::server {

std::string metrics_text(const SchedulerStats& stats, uint64_t http_requests);

}  // namespace cria::server
