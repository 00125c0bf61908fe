#include "bounded_http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace cria::server {

namespace {

// Set on the accepting thread for a connection over the limit: its
// process_and_close_socket() runs there, answers 503 and closes at once.
thread_local bool t_over_limit = false;
// Set by the post-routing handler when the connection must end after this response.
thread_local bool t_close_after_response = false;

const std::string& over_limit_reply() {
    static const std::string body =
        R"({"error":{"code":503,"message":"too many open connections","type":"unavailable_error"}})";
    static const std::string reply =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\n"
        "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    return reply;
}

// One thread per connection, at most `max` at once; the one over the limit
// runs on the accepting thread (which only answers 503 and closes it).
class ThreadPerConnection final : public httplib::TaskQueue {
public:
    explicit ThreadPerConnection(int max) : max_(max) {}

    void enqueue(std::function<void()> fn) override {
        {
            std::lock_guard lock(mutex_);
            if (running_ < max_) {
                ++running_;
                try {
                    std::thread([this, fn] {  // a copy: `fn` must survive a failed thread start
                        fn();
                        std::lock_guard done(mutex_);
                        --running_;
                        idle_.notify_all();  // under the lock: shutdown() cannot return (and free us) before it is out
                    }).detach();
                    return;
                } catch (const std::system_error&) {
                    --running_;  // no thread to be had: treated as over the limit
                }
            }
        }
        t_over_limit = true;
        fn();
        t_over_limit = false;
    }

    void shutdown() override {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [this] { return running_ == 0; });
    }

private:
    const int max_;
    std::mutex mutex_;
    std::condition_variable idle_;
    int running_ = 0;
};

}  // namespace

BoundedHttpServer::BoundedHttpServer(const ConnectionLimits& limits) : limits_(limits) {
    const int max = limits_.max_connections > 0 ? limits_.max_connections : 1;
    new_task_queue = [max] { return new ThreadPerConnection(max); };
    // A response that closes the connection, or one to a request whose body
    // was never read (refused before routing), ends the connection: the
    // unread body must not be taken for the next request.
    set_post_routing_handler([](const httplib::Request& req, httplib::Response& res) {
        const std::string length = req.get_header_value("Content-Length");
        const bool unread_body = !length.empty() && length != "0" && req.body.empty();
        if (res.get_header_value("Connection") != "close" && !unread_body) return;
        res.headers.erase("Connection");
        res.headers.erase("Keep-Alive");
        res.set_header("Connection", "close");
        t_close_after_response = true;
    });
}

BoundedHttpServer::~BoundedHttpServer() {
    // The library closes its socket in stop() only while listening: a socket
    // bound but never listened on, or serve_in_memory()'s placeholder, is ours to close.
    if (!is_running()) {
        const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
        if (sock != INVALID_SOCKET) ::close(sock);
    }
}

void BoundedHttpServer::deepen_backlog(int backlog) {
    // listen() again on a listening socket only changes its backlog.
    if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, backlog);
}

void BoundedHttpServer::serve(httplib::Stream& stream, const std::function<bool()>& next_request) {
    for (size_t left = keep_alive_max_count_; left > 0 && next_request(); --left) {
        t_close_after_response = false;
        bool closed = false;
        const bool ok = process_request(stream, left == 1, closed, nullptr);
        if (!ok || closed || t_close_after_response) break;
    }
}

void BoundedHttpServer::serve_in_memory(httplib::Stream& stream, const std::function<bool()>& next_request) {
    {
        std::lock_guard lock(placeholder_mutex_);
        if (svr_sock_ == INVALID_SOCKET && !is_running()) svr_sock_ = ::socket(AF_INET, SOCK_STREAM, 0);  // closed by the destructor
    }
    serve(stream, next_request);
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
    if (t_over_limit) {
        const std::string& reply = over_limit_reply();
        (void)::send(sock, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        return false;
    }
    ++open_;
    {
        ConnectionStream stream(sock, limits_, [this] { return svr_sock_ != INVALID_SOCKET; });
        serve(stream, [&] { return svr_sock_ != INVALID_SOCKET && stream.wait_for_request(); });
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    --open_;
    return true;
}

}  // namespace cria::server
