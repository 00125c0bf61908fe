#pragma once
// Cross-site protection for a server without an API key (the default on
// localhost): a web page the user visits must not be able to drive it.
// Browsers send Origin on cross-origin requests (and on every POST) and a
// Host naming where they think they connect (DNS rebinding gives the
// attacker's name); both are checked against the listening address, and
// JSON routes take only JSON bodies (a text/plain POST needs no preflight).

#include <string>

namespace cria::server {

struct OriginPolicy {
    std::string listen_host;  // as bound: "127.0.0.1", "localhost", "::1", "0.0.0.0", ...
    int port = 0;
    std::string cors_origin;  // one more origin allowed ("https://app.example"), or empty
};

// Why a request with these headers (empty: absent) is refused, or "" when allowed.
std::string cross_site_refusal(const OriginPolicy& policy, const std::string& origin, const std::string& host);

// Whether an origin may read the responses (for Access-Control-Allow-Origin).
bool origin_allowed(const OriginPolicy& policy, const std::string& origin);

// "application/json" with optional parameters ("; charset=utf-8"), any case.
bool is_json_content_type(const std::string& content_type);

}  // namespace cria::server
