#include "client_socket.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

namespace cria::server {

namespace {

// An address and port as cpp-httplib prints them (getnameinfo, numeric host).
bool describe(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
    char h[NI_MAXHOST], s[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, s, sizeof s,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    host = h;
    port = std::atoi(s);
    return true;
}

bool has_ends(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    std::string host;
    int port = -1;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;  // not a socket
    if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return false;
    if (!describe(addr, len, host, port) || port != local_port || host != local_addr) return false;
    len = sizeof addr;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;  // listening or unconnected
    return describe(addr, len, host, port) && port == remote_port && host == remote_addr;
}

}  // namespace

int find_client_socket(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
    if (local_port <= 0 || remote_port <= 0) return -1;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return -1;
    const int own = dirfd(dir);
    int found = -1;
    while (const dirent* entry = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == own) continue;
        if (has_ends(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
            found = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
    return found;
}

bool client_hung_up(int fd) {
    if (fd < 0) return false;
    pollfd p{};
    p.fd = fd;
    p.events = POLLIN | POLLRDHUP;
    if (poll(&p, 1, 0) <= 0) return false;  // nothing happened (or poll failed: assume the client is there)
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) return true;
    if (p.revents & POLLIN) {
        char byte;
        const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return true;                                      // orderly shutdown
        if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
    }
    return false;
}

}  // namespace cria::server
