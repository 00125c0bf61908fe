#pragma once
// cpp-httplib's server with connections bounded in number and in time, so
// that slow or numerous clients cannot starve the others.
//
// Debian's cpp-httplib 0.11.4 runs each connection on a fixed thread pool
// whose queue is invisible: with every thread held by a generation or by a
// client trickling its headers, /health waits, and requests wait in the
// library before --max-queue can see them. Its read timeout is per recv(),
// not per request. It does keep two hooks: the task queue is ours to make
// (new_task_queue), and the per-connection loop is a virtual function. So:
//  - every connection gets a thread of its own, up to max_connections;
//    beyond that a connection is answered 503 at once and closed. A parsed
//    request therefore reaches its handler (and the scheduler's queue, which
//    answers 503 when full) without waiting for a thread, and /health and
//    /metrics never wait behind generation;
//  - each connection is read through a ConnectionStream, whose deadlines
//    bound the headers and the body of every request (connection_stream.h);
//  - the listening socket gets a deep backlog (the library asks for 5), so
//    a burst of connections is not met with dropped SYNs and 1 s retries.
// docs/ARCHITECTURE.md says why this was kept over moving to Boost.Beast.
#include <httplib.h>

#include <atomic>
#include <functional>
#include <mutex>

#include "connection_stream.h"

namespace cria::server {

class BoundedHttpServer : public httplib::Server {
public:
    explicit BoundedHttpServer(const ConnectionLimits& limits);
    ~BoundedHttpServer() override;

    // After bind_to_port / bind_to_any_port: lets `backlog` connections wait to be accepted.
    void deepen_backlog(int backlog);

    // Serves the requests of one connection until it closes, as a socket's
    // thread does (the fuzz target passes in-memory streams): while
    // `next_request` says another request has begun, at most the keep-alive
    // count of them.
    void serve(httplib::Stream& stream, const std::function<bool()>& next_request);

    // serve() for a server that never listens: cpp-httplib ends streamed
    // responses at once when it has no listening socket, so this one gets a
    // placeholder socket (never bound: no port is opened) first.
    void serve_in_memory(httplib::Stream& stream, const std::function<bool()>& next_request);

    int open_connections() const { return open_.load(); }
    const ConnectionLimits& limits() const { return limits_; }

private:
    bool process_and_close_socket(socket_t sock) override;

    const ConnectionLimits limits_;
    std::atomic<int> open_{0};
    std::mutex placeholder_mutex_;
};

}  // namespace cria::server
