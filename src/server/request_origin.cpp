#include "server/request_origin.h"

#include <algorithm>
#include <cctype>

namespace cria::server {
namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool is_loopback_name(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
}

// "host[:port]" -> host and port (-1 when absent); IPv6 in brackets.
void split_host_port(const std::string& authority, std::string& host, int& port) {
    port = -1;
    host = authority;
    size_t colon = std::string::npos;
    if (!authority.empty() && authority.front() == '[') {
        const size_t close = authority.find(']');
        if (close != std::string::npos && close + 1 < authority.size() && authority[close + 1] == ':') colon = close + 1;
    } else {
        colon = authority.rfind(':');
    }
    if (colon == std::string::npos) return;
    host = authority.substr(0, colon);
    const std::string digits = authority.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) {
        port = -2;  // malformed
        return;
    }
    port = std::stoi(digits);
}

// The same place the server listens on: a loopback name and our port (the
// default port of the scheme when absent).
bool is_our_loopback(const OriginPolicy& p, const std::string& authority, int default_port) {
    std::string host;
    int port = 0;
    split_host_port(lower(authority), host, port);
    if (port == -1) port = default_port;
    return is_loopback_name(host) && port == p.port;
}

}  // namespace

bool origin_allowed(const OriginPolicy& p, const std::string& origin) {
    if (origin.empty()) return true;
    if (!p.cors_origin.empty() && lower(origin) == lower(p.cors_origin)) return true;
    const std::string o = lower(origin);
    if (o.rfind("http://", 0) != 0) return false;  // "null", file:, other schemes: not our page
    std::string authority = o.substr(7);
    if (const size_t slash = authority.find('/'); slash != std::string::npos) authority.resize(slash);
    return is_our_loopback(p, authority, 80);
}

std::string cross_site_refusal(const OriginPolicy& p, const std::string& origin, const std::string& host) {
    if (!origin_allowed(p, origin))
        return "requests from the web origin '" + origin +
               "' are refused (start the server with --api-key, or allow that origin with --cors-origin)";
    // DNS rebinding: a loopback server answers only to loopback names.
    if (is_loopback_name(lower(p.listen_host)) && !host.empty() && !is_our_loopback(p, host, 80))
        return "requests for host '" + host + "' are refused: this server listens on " + p.listen_host + ":" +
               std::to_string(p.port);
    return {};
}

bool is_json_content_type(const std::string& content_type) {
    std::string t = lower(content_type.substr(0, content_type.find(';')));
    while (!t.empty() && t.back() == ' ') t.pop_back();
    while (!t.empty() && t.front() == ' ') t.erase(t.begin());
    return t == "application/json";
}

}  // namespace cria::server
