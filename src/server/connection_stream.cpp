#include "connection_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cria::server {

namespace {

// Waits are cut in slices so that a stopping server is noticed.
constexpr std::chrono::milliseconds kPollSlice{100};

void describe(int fd, bool peer, std::string& ip, int& port) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                        : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    if (rc != 0) return;
    char h[NI_MAXHOST], s[NI_MAXSERV];
    // As cpp-httplib prints them (client_socket.cpp matches on these strings).
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, s, sizeof s,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return;
    ip = h;
    port = std::atoi(s);
}

int poll_ms(std::chrono::steady_clock::duration d) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    return static_cast<int>(std::clamp<long long>(ms, 0, kPollSlice.count()));
}

}  // namespace

ConnectionStream::ConnectionStream(int fd, const ConnectionLimits& limits, std::function<bool()> serving)
    : fd_(fd), limits_(limits), serving_(std::move(serving)) {
    describe(fd, true, remote_ip_, remote_port_);
    describe(fd, false, local_ip_, local_port_);
}

bool ConnectionStream::wait_readable(Clock::time_point deadline) const {
    for (;;) {
        if (!serving_()) return false;
        const auto now = Clock::now();
        if (now >= deadline) return false;
        pollfd p{fd_, POLLIN, 0};
        const int rc = ::poll(&p, 1, poll_ms(deadline - now));
        if (rc < 0 && errno != EINTR) return false;
        if (rc > 0) return (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;  // recv() tells data from hang-up
    }
}

bool ConnectionStream::wait_for_request() {
    if (broken_) return false;
    if (buf_begin_ == buf_end_ && !wait_readable(Clock::now() + limits_.idle_timeout)) return false;
    phase_ = Phase::Headers;
    deadline_ = Clock::now() + limits_.header_timeout;
    header_bytes_ = 0;
    line_length_ = 0;
    line_had_cr_ = false;
    return true;
}

void ConnectionStream::refuse(const char* status_line) {
    std::string reply = std::string("HTTP/1.1 ") + status_line + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)::send(fd_, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    broken_ = true;
}

bool ConnectionStream::fill() {
    if (!wait_readable(deadline_)) {
        if (serving_() && Clock::now() >= deadline_) refuse("408 Request Timeout");
        else broken_ = true;
        return false;
    }
    const ssize_t n = ::recv(fd_, buf_, sizeof buf_, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;  // spurious wake-up
    if (n <= 0) {
        broken_ = true;
        return false;
    }
    buf_begin_ = 0;
    buf_end_ = static_cast<size_t>(n);
    return true;
}

void ConnectionStream::consumed(const char* p, size_t n) {
    if (phase_ != Phase::Headers) return;
    for (size_t i = 0; i < n; ++i) {
        ++header_bytes_;
        ++line_length_;
        if (p[i] == '\n') {
            // cpp-httplib ends the headers at a line that is exactly "\r\n".
            const bool blank = line_length_ == 2 && line_had_cr_;
            line_length_ = 0;
            if (blank) {
                phase_ = Phase::Body;
                deadline_ = Clock::now() + limits_.body_timeout;
                return;
            }
        }
        line_had_cr_ = p[i] == '\r';
    }
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
    if (broken_) return -1;
    while (buf_begin_ == buf_end_) {
        if (!fill()) return broken_ ? -1 : 0;
    }
    size_t n = std::min(size, buf_end_ - buf_begin_);
    if (phase_ == Phase::Headers) {
        // Hand the parser no more than the header limit allows.
        if (header_bytes_ >= limits_.max_header_bytes) {
            refuse("431 Request Header Fields Too Large");
            return -1;
        }
        n = std::min(n, limits_.max_header_bytes - header_bytes_);
    }
    std::memcpy(ptr, buf_ + buf_begin_, n);
    consumed(buf_ + buf_begin_, n);
    buf_begin_ += n;
    return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
    if (broken_) return -1;
    const auto deadline = Clock::now() + limits_.write_timeout;
    for (;;) {
        const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return n;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
        // The client is not reading: wait for room, within the write timeout.
        pollfd p{fd_, POLLOUT, 0};
        const auto now = Clock::now();
        if (!serving_() || now >= deadline) break;
        if (::poll(&p, 1, poll_ms(deadline - now)) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) break;
    }
    broken_ = true;
    return -1;
}

bool ConnectionStream::is_readable() const {
    return buf_begin_ != buf_end_ || (!broken_ && wait_readable(deadline_));
}

bool ConnectionStream::is_writable() const {
    if (broken_) return false;
    pollfd p{fd_, POLLOUT, 0};
    // A hang-up shows at once; a full send buffer is waited for by write().
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
    return true;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    ip = remote_ip_;
    port = remote_port_;
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
    ip = local_ip_;
    port = local_port_;
}

}  // namespace cria::server
