#pragma once
// One client connection as cpp-httplib reads and writes it, with deadlines
// per phase of a request instead of the library's timeout per recv().
//
// cpp-httplib 0.11.4 waits up to its read timeout for each recv(), so a
// client that sends a header line now and then holds a thread forever, and
// one that stalls mid-headers holds it for the whole timeout. Here a
// request's headers must arrive within `header_timeout` of its first byte
// and be at most `max_header_bytes` long, and its body within `body_timeout`
// of the blank line that ends the headers; past either limit the client gets
// 408 or 431 and the connection is closed (reads and writes fail from then
// on, so the library cannot answer a second time).
#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>

namespace cria::server {

struct ConnectionLimits {
    std::chrono::milliseconds header_timeout{5000};  // request line + headers, from their first byte
    std::chrono::milliseconds body_timeout{60000};   // the body, from the end of the headers
    std::chrono::milliseconds idle_timeout{5000};    // a kept-alive connection waiting for its next request
    std::chrono::milliseconds write_timeout{600000}; // one send() waiting for the client to read
    size_t max_header_bytes = 64 * 1024;             // request line + headers
    int max_connections = 256;                       // open at once; more are answered 503 and closed
};

class ConnectionStream final : public httplib::Stream {
public:
    // `serving` is asked while waiting, so a stopping server does not wait
    // for a deadline; the stream does not own `fd`.
    ConnectionStream(int fd, const ConnectionLimits& limits, std::function<bool()> serving);

    // Waits (up to the idle timeout) until the next request's first byte is
    // here, and starts its header deadline. False: closed, idle or stopping.
    bool wait_for_request();
    // True once a limit was hit or the socket failed: the connection must close.
    bool broken() const { return broken_; }

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return fd_; }

private:
    enum class Phase { Headers, Body };
    using Clock = std::chrono::steady_clock;

    // Waits until the socket is readable or `deadline` passes; false on
    // timeout, hang-up or a stopping server.
    bool wait_readable(Clock::time_point deadline) const;
    // Reads more into the buffer within the phase's deadline; false: nothing came.
    bool fill();
    // Follows the bytes handed to the parser to find the blank line ending the headers.
    void consumed(const char* p, size_t n);
    // Answers `status_line` (408, 431) and marks the connection broken.
    void refuse(const char* status_line);

    int fd_;
    const ConnectionLimits& limits_;
    std::function<bool()> serving_;
    std::string remote_ip_, local_ip_;
    int remote_port_ = 0, local_port_ = 0;

    char buf_[4096];
    size_t buf_begin_ = 0, buf_end_ = 0;
    Phase phase_ = Phase::Headers;
    Clock::time_point deadline_;
    size_t header_bytes_ = 0;
    size_t line_length_ = 0;  // bytes since the last '\n' of the headers
    bool line_had_cr_ = false;
    bool broken_ = false;
};

}  // namespace cria::server
