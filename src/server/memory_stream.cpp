#include "memory_stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace cria::server {

namespace {
// What a reply may grow to before writes fail (as a client that stops reading).
constexpr size_t kMaxOutput = 16u << 20;
}  // namespace

ssize_t MemoryStream::read(char* ptr, size_t size) {
    const size_t n = std::min(size, input_.size() - pos_);
    std::memcpy(ptr, input_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
}

ssize_t MemoryStream::write(const char* ptr, size_t size) {
    if (output_.size() + size > kMaxOutput) return -1;
    const std::string_view data(ptr, size);
    if (data.size() >= 12 && data.substr(0, 9) == "HTTP/1.1 ") statuses_.push_back(std::atoi(std::string(data.substr(9, 3)).c_str()));
    output_.append(ptr, size);
    return static_cast<ssize_t>(size);
}

// A loopback client, so the keyless server's origin checks treat it as local.
void MemoryStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    ip = "127.0.0.1";
    port = 40000;
}

void MemoryStream::get_local_ip_and_port(std::string& ip, int& port) const {
    ip = "127.0.0.1";
    port = 8080;
}

}  // namespace cria::server
