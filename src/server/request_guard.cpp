#include "server/request_guard.h"

#include <algorithm>
#include <cctype>

#include "server/request_origin.h"

namespace cria::server {
namespace {

void send_error(httplib::Response& res, Dialect d, int status, const std::string& message, const std::string& type = {}) {
    res.status = status;
    res.set_content(error_body(d, status, type, message, ""), "application/json; charset=utf-8");
}

// Compares without stopping at the first difference, so response time does
// not tell how much of a guessed key was right.
bool same_secret(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
    return diff == 0 && !b.empty();
}

// Without a key, a browser page elsewhere must not drive the server.
bool refuse_cross_site(const RequestGuard& g, const httplib::Request& req, httplib::Response& res) {
    const OriginPolicy policy{g.host, g.port, g.cors_origin};
    const std::string origin = req.get_header_value("Origin");
    const std::string why = cross_site_refusal(policy, origin, req.get_header_value("Host"));
    const Dialect d = dialect_of(req.path);
    if (!why.empty()) {
        send_error(res, d, 403, why, d == Dialect::OpenAI ? "permission_error" : "");
        return true;
    }
    if (!origin.empty()) {
        res.set_header("Access-Control-Allow-Origin", origin);
        res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {  // a preflight from an allowed origin
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Content-Type, Authorization, x-api-key, anthropic-version");
        res.status = 204;
        return true;
    }
    return false;
}

// Bodies the server will not read to the end are refused from their
// headers, before a thread waits for them: a Content-Length that is not a
// number or is over --max-body, chunked bodies (their size is known only at
// the end) and compressed ones (a small body can inflate to any size).
bool refuse_unbounded_body(const RequestGuard& g, const httplib::Request& req, httplib::Response& res) {
    const auto refuse = [&](int status, const std::string& why) {
        send_error(res, dialect_of(req.path), status, why);
        res.set_header("Connection", "close");
        return true;
    };
    const std::string length = req.get_header_value("Content-Length");
    if (!length.empty()) {
        const bool digits =
            length.size() <= 19 && std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits) return refuse(400, "Content-Length must be a decimal number of bytes");
        if (std::stoull(length) > g.max_body_bytes)
            return refuse(413, "the request body is larger than " + std::to_string(g.max_body_bytes) + " bytes (--max-body)");
    }
    if (req.has_header("Transfer-Encoding"))
        return refuse(411, "chunked request bodies are not accepted: send Content-Length");
    if (req.has_header("Content-Encoding") && req.get_header_value("Content-Encoding") != "identity")
        return refuse(415, "compressed request bodies are not accepted");
    return false;
}

// Every route takes JSON bodies. Refused before the body is read: a form
// body would otherwise meet the HTTP library's own 8 KB form limit.
bool refuse_non_json_body(const httplib::Request& req, httplib::Response& res) {
    const std::string length = req.get_header_value("Content-Length");
    const bool has_body = (!length.empty() && length != "0") || req.has_header("Transfer-Encoding");
    if (req.method != "POST" || !has_body || is_json_content_type(req.get_header_value("Content-Type"))) return false;
    send_error(res, dialect_of(req.path), 415, "request bodies must be JSON (Content-Type: application/json)");
    return true;
}

bool authorized(const RequestGuard& g, const httplib::Request& req) {
    if (g.api_key.empty()) return true;
    const std::string auth = req.get_header_value("Authorization");
    // The scheme name is case-insensitive (RFC 7235 section 2.1): "bearer KEY" is as good as "Bearer KEY".
    const bool bearer = auth.size() > 7 && auth[6] == ' ' &&
                        std::equal(auth.begin(), auth.begin() + 6, "bearer", [](char a, char b) {
                            return std::tolower(static_cast<unsigned char>(a)) == b;
                        });
    if (bearer && same_secret(auth.substr(7), g.api_key)) return true;
    const std::string x = req.get_header_value("x-api-key");
    return !x.empty() && same_secret(x, g.api_key);
}

}  // namespace

Dialect dialect_of(const std::string& path) {
    return path.rfind("/v1/messages", 0) == 0 ? Dialect::Anthropic : Dialect::OpenAI;
}

bool refused_before_routing(const RequestGuard& g, const httplib::Request& req, httplib::Response& res) {
    if (g.api_key.empty() && refuse_cross_site(g, req, res)) return true;
    if (refuse_unbounded_body(g, req, res) || refuse_non_json_body(req, res)) return true;
    const bool page = req.path == "/" || req.path == "/index.html";
    const bool open_route = req.path == "/health" || ((req.method == "GET" || req.method == "HEAD") && page);
    if (open_route || authorized(g, req)) return false;
    const Dialect d = dialect_of(req.path);
    send_error(res, d, 401, "Invalid API key: pass it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
               d == Dialect::OpenAI ? "invalid_request_error" : "");
    return true;
}

}  // namespace cria::server
