// Stop strings in streamed text (see stop_strings.h).

#include "server/stop_strings.h"

#include <algorithm>

namespace cria::server {

StopScan scan_stop_strings(const std::string& text, size_t sent, const std::vector<std::string>& stops, bool at_end) {
    size_t max_len = 0;
    for (const auto& s : stops) max_len = std::max(max_len, s.size());
    StopScan scan;
    // Only text that arrived since the last scan can complete a stop string.
    const size_t from = sent >= max_len ? sent - max_len + 1 : 0;
    for (const auto& s : stops) {
        if (s.empty()) continue;
        const size_t at = text.find(s, from);
        if (at != std::string::npos && at < scan.cut) scan.cut = at, scan.word = s;
    }
    scan.upto = text.size();
    if (scan.cut != std::string::npos) {
        scan.upto = std::max(scan.cut, sent);
    } else if (!at_end) {
        // Hold back a tail that could still grow into a stop string.
        for (const auto& s : stops) {
            for (size_t k = std::min(s.size() - 1, text.size()); k > 0; --k) {
                if (text.compare(text.size() - k, k, s, 0, k) == 0) {
                    scan.upto = std::min(scan.upto, text.size() - k);
                    break;
                }
            }
        }
        scan.upto = std::max(scan.upto, sent);
    }
    return scan;
}

}  // namespace cria::server
