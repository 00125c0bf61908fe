#pragma once
// Stop strings in streamed text: how much of the text may be sent now, and
// where a stop string ends it. Pure, so the rules are testable alone.

#include <string>
#include <vector>

namespace cria::server {

struct StopScan {
    size_t upto = 0;                     // text[sent, upto) may be sent now
    size_t cut = std::string::npos;      // where the earliest complete stop string starts (npos: none)
    std::string word;                    // that stop string
};

// `sent`: bytes already sent. A complete stop string (the earliest) ends the
// output where it starts; otherwise, unless at_end, a tail that could still
// grow into a stop string is held back.
StopScan scan_stop_strings(const std::string& text, size_t sent, const std::vector<std::string>& stops, bool at_end);

}  // namespace cria::server
