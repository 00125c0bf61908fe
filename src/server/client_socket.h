#pragma once
// Telling that an HTTP client hung up while its request waits for the
// scheduler (non-streaming responses write nothing until the end, so no
// failed write can tell us).
//
// Debian's cpp-httplib 0.11.4 hands handlers neither the socket nor a
// closed-connection check (Request::is_connection_closed came later), but it
// does give both ends of the TCP connection (local_addr/port,
// remote_addr/port). find_client_socket() finds the process's socket with
// exactly those ends; the handler's worker thread owns it until the handler
// returns, so the descriptor stays valid while the handler waits.
#include <string>

namespace cria::server {

// The descriptor of the connected TCP socket with these ends, or -1 when
// there is none (or /proc/self/fd cannot be read).
int find_client_socket(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

// True when the peer closed or reset the connection. Data waiting to be read
// (a pipelined request) means the client is still there. Never blocks.
bool client_hung_up(int fd);

}  // namespace cria::server
