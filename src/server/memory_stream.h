#pragma once
// An httplib::Stream over bytes in memory: the requests to read, and what
// the server writes back. Lets the fuzz target (and its replay test) drive
// the whole HTTP layer, parser and routes, without a socket.
#include <httplib.h>

#include <string>
#include <string_view>
#include <vector>

namespace cria::server {

class MemoryStream final : public httplib::Stream {
public:
    explicit MemoryStream(std::string_view input) : input_(input) {}

    const std::string& output() const { return output_; }
    // The status of each answer written: cpp-httplib writes a response's
    // status line and headers in one write(), bodies in later ones.
    const std::vector<int>& statuses() const { return statuses_; }
    bool has_more() const { return pos_ < input_.size(); }

    bool is_readable() const override { return has_more(); }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return -1; }  // none: the client watch finds no socket to poll

private:
    std::string_view input_;
    size_t pos_ = 0;
    std::string output_;
    std::vector<int> statuses_;
};

}  // namespace cria::server
