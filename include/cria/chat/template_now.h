#pragma once
// `cria template --now YYYY-MM-DD[THH:MM]`: the moment strftime_now() renders,
// so that date-dependent templates (Llama 3.x's "Today Date", ...) give the
// same text on any day. The time is UTC.

#include <string>

namespace cria::chat {

// Seconds since the epoch (UTC) for "2026-12-01" (midnight) or
// "2026-12-01T13:45". Throws cria::Error naming the expected form for
// anything else (bad digits, month 13, February 30, 24:00, ...).
long long parse_template_now(const std::string& text);

}  // namespace cria::chat
