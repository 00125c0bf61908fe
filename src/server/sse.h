#pragma once
// Server-sent events framing (https://html.spec.whatwg.org/#server-sent-events):
// an optional "event:" line, one "data:" line per line of payload, and a
// blank line ending the event. JSON payloads are compact, so they are one line.
#include <string>
#include <string_view>

namespace cria::server {

inline std::string sse_event(std::string_view data, std::string_view event = {}) {
    std::string out;
    if (!event.empty()) out.append("event: ").append(event).append("\n");
    size_t start = 0;
    for (;;) {
        const size_t nl = data.find('\n', start);
        out.append("data: ").append(data.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
        out.append("\n");
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    out.append("\n");
    return out;
}

}  // namespace cria::server
