// MPI with deadlines (cria/distributed/mpi_world.h).

#include "cria/distributed/mpi_world.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cria/core/error.h"

namespace cria::distributed {
namespace {

MPI_Request* as_request(void* p) { return static_cast<MPI_Request*>(p); }

// Polls `done` until it is true or the deadline passes: a short spin first
// (a hidden state of a decoding step arrives within microseconds of being
// sent), then sleeps that grow to 1 ms so that an idle rank costs nothing.
template <typename Done>
bool poll_until(Done done, double timeout_s, bool forever) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    for (int i = 0; i < 2000; ++i) {
        if (done()) return true;
        std::this_thread::yield();
    }
    auto sleep = std::chrono::microseconds(20);
    while (!done()) {
        const double waited = std::chrono::duration<double>(clock::now() - start).count();
        if (!forever && waited > timeout_s) return false;
        std::this_thread::sleep_for(sleep);
        if (waited > 0.01) sleep = std::min<std::chrono::microseconds>(sleep * 2, std::chrono::microseconds(1000));
    }
    return true;
}

}  // namespace

bool launched_with_several_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
        const char* v = std::getenv(name);
        if (v != nullptr && std::atoi(v) > 1) return true;
    }
    // srun sets the step's task count only inside a job step it started.
    const char* slurm = std::getenv("SLURM_STEP_NUM_TASKS");
    return slurm != nullptr && std::atoi(slurm) > 1;
}

World::World(int* argc, char*** argv, double timeout_s) : timeout_s_(timeout_s) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        throw Error("MPI_Init_thread failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (provided < MPI_THREAD_SERIALIZED)
        fail("this MPI library gives thread level " + std::to_string(provided) + "; cria needs at least MPI_THREAD_SERIALIZED");
}

World::~World() { MPI_Finalize(); }

void World::fail(const std::string& message) const {
    std::fprintf(stderr, "cria: rank %d: error: %s\n", rank_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();  // MPI_Abort does not return; this only tells the compiler so
}

World::Pending World::send(int peer, Tag tag, std::span<const std::byte> bytes) const {
    if (bytes.size() > static_cast<size_t>(INT32_MAX)) fail("a message of " + std::to_string(bytes.size()) + " bytes is too large");
    auto* request = new MPI_Request;
    MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, peer, static_cast<int>(tag), MPI_COMM_WORLD, request);
    return {request, peer, tag};
}

World::Pending World::receive(int peer, Tag tag, std::span<std::byte> bytes) const {
    if (bytes.size() > static_cast<size_t>(INT32_MAX)) fail("a message of " + std::to_string(bytes.size()) + " bytes is too large");
    auto* request = new MPI_Request;
    MPI_Irecv(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, peer, static_cast<int>(tag), MPI_COMM_WORLD, request);
    return {request, peer, tag};
}

void World::wait(Pending& p, const char* what, double factor) const {
    if (p.request == nullptr) return;
    MPI_Request* request = as_request(p.request);
    MPI_Status status;
    const bool done = poll_until(
        [&] {
            int flag = 0;
            MPI_Test(request, &flag, &status);
            return flag != 0;
        },
        timeout_s_ * factor, false);
    if (!done) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", timeout_s_ * factor);
        fail(std::string(what) + ": nothing from rank " + std::to_string(p.peer) + " within " + seconds +
             " s (is rank " + std::to_string(p.peer) + " alive? --mpi-timeout sets the limit)");
    }
    delete request;
    p.request = nullptr;
}

void World::wait_all(std::vector<Pending>& pending, const char* what, double factor) const {
    for (Pending& p : pending) wait(p, what, factor);
    pending.clear();
}

std::vector<std::byte> World::receive_any_size(int peer, Tag tag, const char* what, bool forever, double factor) const {
    MPI_Status status;
    const bool arrived = poll_until(
        [&] {
            int flag = 0;
            MPI_Iprobe(peer, static_cast<int>(tag), MPI_COMM_WORLD, &flag, &status);
            return flag != 0;
        },
        timeout_s_ * factor, forever);
    if (!arrived) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", timeout_s_ * factor);
        fail(std::string(what) + ": nothing from rank " + std::to_string(peer) + " within " + seconds + " s");
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::vector<std::byte> bytes(static_cast<size_t>(count));
    MPI_Recv(bytes.data(), count, MPI_BYTE, peer, static_cast<int>(tag), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return bytes;
}

}  // namespace cria::distributed
