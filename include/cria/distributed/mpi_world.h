#pragma once
// The MPI side of cria's pipeline: the world of ranks, and point-to-point
// messages that never wait forever. Every receive is posted (MPI_Irecv) and
// polled against a deadline; a message that does not arrive in time ends the
// whole job (MPI_Abort) with an error naming the rank it waited for. Polling
// sleeps between tests, so a waiting rank leaves its core to the others
// (Open MPI's blocking calls would spin at 100%).
//
// Knows nothing of HTTP or of the tools; only this module includes <mpi.h>.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cria::distributed {

// Message tags: one channel per purpose, so that each is in order.
enum class Tag : int { Command = 1, Reply = 2, Stream = 3, Outputs = 4 };

class World {
public:
    // MPI_Init_thread (thread-multiple: the server calls from several
    // threads; the pipeline serialises its own calls). timeout_s bounds every
    // wait for a message of a running operation.
    World(int* argc, char*** argv, double timeout_s);
    ~World();  // MPI_Finalize
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    double timeout_s() const { return timeout_s_; }

    // Ends every rank: prints "cria: rank R: message" and calls MPI_Abort.
    [[noreturn]] void fail(const std::string& message) const;

    // A posted send or receive; wait() polls it.
    struct Pending {
        void* request = nullptr;  // MPI_Request, kept opaque here
        int peer = -1;
        Tag tag = Tag::Command;
    };
    Pending send(int peer, Tag tag, std::span<const std::byte> bytes) const;
    Pending receive(int peer, Tag tag, std::span<std::byte> bytes) const;
    // Waits for it; past the deadline (timeout_s() x factor) fails naming
    // the peer and what was awaited.
    void wait(Pending& pending, const char* what, double factor = 1.0) const;
    void wait_all(std::vector<Pending>& pending, const char* what, double factor = 1.0) const;

    // A message of unknown size from `peer` (commands, replies). With
    // forever, waits without a deadline (an idle rank waiting for work).
    std::vector<std::byte> receive_any_size(int peer, Tag tag, const char* what, bool forever, double factor = 1.0) const;

    template <typename T>
    static std::span<const std::byte> bytes_of(std::span<const T> s) {
        return std::as_bytes(s);
    }

private:
    int rank_ = 0;
    int size_ = 1;
    double timeout_s_ = 60;
};

// Whether this process was started by mpirun (Open MPI, MPICH/Hydra or Slurm's PMI) with more than one rank.
bool launched_with_several_ranks();

}  // namespace cria::distributed
