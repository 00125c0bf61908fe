#pragma once
// What every request must pass before it is routed, answered from its
// request line and headers alone (before any body is read):
//   - without an API key, cross-site protection (request_origin.h): a foreign
//     Origin or, on a loopback server, a foreign Host is 403; preflights from
//     allowed origins are answered;
//   - bodies the server can bound: a malformed Content-Length is 400, one
//     over --max-body 413, chunked 411, compressed 415 (connection closed);
//   - JSON only: any other POST body is 415;
//   - the API key (Authorization: Bearer, scheme in any case, or x-api-key;
//     compared in constant time), except for /health and the chat page.

#include <httplib.h>

#include <cstddef>
#include <string>

#include "api.h"

namespace cria::server {

struct RequestGuard {
    std::string host;         // the listening address
    int port = 0;
    std::string cors_origin;  // --cors-origin
    std::string api_key;      // empty: no key
    size_t max_body_bytes = 0;
};

// Answers the request (an error, or a preflight) and returns true when it
// must not be routed.
bool refused_before_routing(const RequestGuard& guard, const httplib::Request& req, httplib::Response& res);

// Which API's error shape a path answers in.
Dialect dialect_of(const std::string& path);

}  // namespace cria::server
