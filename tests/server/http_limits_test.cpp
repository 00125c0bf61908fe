// The HTTP layer cannot be starved: stalled and trickling headers get 408
// within the header deadline while /health stays quick, oversized headers
// 431, connections over the limit 503, and requests over --max-queue are
// answered 503 at once instead of waiting for an HTTP thread.
#include <gtest/gtest.h>

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "cria/server/runtime_backend.h"
#include "cria/server/server.h"
#include "support/test_paths.h"

using namespace cria::server;
using Clock = std::chrono::steady_clock;

namespace {

class HttpLimits : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::signal(SIGPIPE, SIG_IGN);
        RuntimeBackendParams bp;
        bp.n_seq = 1;
        bp.n_ctx = 2048;
        bp.n_threads = 1;
        const auto path = cria::test::model_path("stories260K/stories260K.gguf").string();
        ServerConfig config;
        config.port = 0;
        config.model_path = path;
        config.header_timeout_s = 1;
        config.read_timeout_s = 1;
        config.max_connections = 40;
        config.scheduler.n_slots = 1;
        config.scheduler.max_queue = 1;
        server_ = new Server(std::make_unique<RuntimeBackend>(path, bp), config);
        server_->start();
    }
    static void TearDownTestSuite() { delete server_; }

    // A connected socket that has sent `bytes` (-1 when the connection failed).
    static int open_socket(const std::string& bytes = "") {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        timeval tv{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            ::close(fd);
            return -1;
        }
        if (!bytes.empty()) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        return fd;
    }
    // The first line of what the server answers within 5 s ("" for nothing).
    static std::string status_line(int fd) {
        char buf[512];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return "";
        const std::string reply(buf, static_cast<size_t>(n));
        return reply.substr(0, reply.find("\r\n"));
    }
    // Milliseconds a GET /health takes (fresh connection); -1 when it fails.
    static double health_ms() {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(10, 0);
        const auto t0 = Clock::now();
        auto r = c.Get("/health");
        if (!r || r->status != 200) return -1;
        return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }

    static std::string host() { return "Host: 127.0.0.1:" + std::to_string(server_->port()) + "\r\n"; }

    static Server* server_;
};
Server* HttpLimits::server_ = nullptr;

}  // namespace

TEST_F(HttpLimits, StalledHeadersGet408AndDoNotStarveHealth) {
    // 20 clients send a request line and one header, then stall: each used to
    // hold an HTTP thread for the whole 60 s read timeout.
    std::vector<int> stalled;
    for (int i = 0; i < 20; ++i) stalled.push_back(open_socket("GET /v1/models HTTP/1.1\r\n" + host()));
    for (int fd : stalled) ASSERT_GE(fd, 0);
    for (int i = 0; i < 5; ++i) {
        const double ms = health_ms();
        EXPECT_GE(ms, 0);
        EXPECT_LT(ms, 500) << "/health waited behind stalled clients";
    }
    const auto t0 = Clock::now();
    for (int fd : stalled) {
        EXPECT_EQ(status_line(fd), "HTTP/1.1 408 Request Timeout");
        ::close(fd);
    }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3.0) << "the header deadline is 1 s";
}

TEST_F(HttpLimits, TricklingHeadersMeetAWholeRequestDeadlineNotAPerReadOne) {
    // One byte every 200 ms never trips a per-recv timeout; the header
    // deadline (1 s from the first byte) still ends it.
    const int fd = open_socket("G");
    ASSERT_GE(fd, 0);
    const std::string rest = "ET /health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    std::string answer;
    const auto t0 = Clock::now();
    for (size_t i = 0; i < rest.size() && answer.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        char buf[256];
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);  // answered already?
        if (n > 0) answer = std::string(buf, static_cast<size_t>(n)).substr(0, std::string(buf, static_cast<size_t>(n)).find("\r\n"));
        else ::send(fd, &rest[i], 1, MSG_NOSIGNAL);
    }
    ::close(fd);
    EXPECT_EQ(answer, "HTTP/1.1 408 Request Timeout");
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 15.0);
}

TEST_F(HttpLimits, OversizedHeadersAre431) {
    std::string request = "GET /health HTTP/1.1\r\n" + host();
    for (int i = 0; i < 2000; ++i) request += "X-Filler-" + std::to_string(i) + ": " + std::string(40, 'x') + "\r\n";
    request += "\r\n";
    const int fd = open_socket(request);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(status_line(fd), "HTTP/1.1 431 Request Header Fields Too Large");
    ::close(fd);
    EXPECT_GE(health_ms(), 0);
}

TEST_F(HttpLimits, SlowBodiesGet408) {
    const int fd = open_socket("POST /tokenize HTTP/1.1\r\n" + host() + "Content-Type: application/json\r\n"
                               "Content-Length: 100\r\n\r\n{\"content\":");
    ASSERT_GE(fd, 0);
    EXPECT_EQ(status_line(fd), "HTTP/1.1 408 Request Timeout");
    ::close(fd);
}

TEST_F(HttpLimits, KeepAliveAndPipelinedRequestsStillWork) {
    const int fd = open_socket("GET /health HTTP/1.1\r\n" + host() + "\r\nGET /health HTTP/1.1\r\n" + host() + "\r\n");
    ASSERT_GE(fd, 0);
    std::string all;
    char buf[1024];
    while (all.find("HTTP/1.1 200", all.find("HTTP/1.1 200") + 1) == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        all.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    EXPECT_NE(all.find("HTTP/1.1 200", all.find("HTTP/1.1 200") + 1), std::string::npos) << all;
    httplib::Client c("127.0.0.1", server_->port());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(c.Get("/health")->status, 200);  // one kept-alive connection
}

TEST_F(HttpLimits, ConnectionsOverTheLimitAre503AtOnce) {
    // 45 connections to a server taking 40: the ones over the limit are
    // answered 503 at once (before they send anything), the others serve.
    std::vector<int> sockets;
    for (int i = 0; i < 45; ++i) sockets.push_back(open_socket());
    for (int fd : sockets) ASSERT_GE(fd, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the server take them all
    const std::string request = "GET /health HTTP/1.1\r\n" + host() + "\r\n";
    int ok = 0, refused = 0;
    for (int fd : sockets) {
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
        const std::string status = status_line(fd);
        if (status == "HTTP/1.1 200 OK") ++ok;
        else if (status == "HTTP/1.1 503 Service Unavailable") ++refused;
        else ADD_FAILURE() << "answered '" << status << "'";
    }
    for (int fd : sockets) ::close(fd);
    EXPECT_GE(refused, 5);
    EXPECT_GE(ok, 1);
    bool served = false;
    for (int i = 0; i < 50 && !served; ++i) {  // the connections' threads notice the close
        served = health_ms() >= 0;
        if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(served);
}

TEST_F(HttpLimits, RequestsOverTheQueueAre503AtOnceAndHealthStaysQuick) {
    // One slot, a queue of one: of 30 simultaneous generations most must be
    // refused at once (they used to wait for an HTTP thread first).
    const std::string body =
        R"({"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":1000,"temperature":0,"ignore_eos":true})";
    std::vector<std::future<std::pair<int, double>>> replies;
    for (int i = 0; i < 30; ++i)
        replies.push_back(std::async(std::launch::async, [&] {
            httplib::Client c("127.0.0.1", server_->port());
            c.set_read_timeout(60, 0);
            const auto t0 = Clock::now();
            auto r = c.Post("/v1/chat/completions", body, "application/json");
            return std::make_pair(r ? r->status : -1, std::chrono::duration<double>(Clock::now() - t0).count());
        }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double during = health_ms();
    int ok = 0, refused = 0;
    for (auto& f : replies) {
        const auto [status, seconds] = f.get();
        if (status == 200) ++ok;
        else if (status == 503) {
            ++refused;
            EXPECT_LT(seconds, 2.0) << "a 503 came late";
        } else ADD_FAILURE() << "status " << status;
    }
    EXPECT_GE(ok, 1);
    EXPECT_GE(refused, 20);
    EXPECT_GE(during, 0);
    EXPECT_LT(during, 500);
}
