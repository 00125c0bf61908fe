#pragma once
// Per-op accounting of a thread pool's jobs, switched on by the environment
// variable CRIA_POOL_STATS=1 (off, the pool pays one null-pointer test per
// job and per chunk). It answers "where does multi-threaded time go" without
// trusting one wall-clock figure on a loaded machine: for each parallel_for
// call site, the wall time of its jobs, the time each thread spent inside
// chunks (steady clock and thread CPU time), the start latency until the
// last thread joined, the tail after the first thread ran out of chunks, and
// the caller's serial time between jobs. The table goes to stderr when the
// pool is destroyed.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cria::cpu {

class ThreadPoolStats {
public:
    // Null unless CRIA_POOL_STATS is set to something other than 0.
    static ThreadPoolStats* create_if_enabled(int n_threads);

    explicit ThreadPoolStats(int n_threads);
    ~ThreadPoolStats();  // prints the table

    // Caller, around one parallel_for (dispatched or run inline).
    void job_begin();
    void job_end(const char* site, bool dispatched);
    // Any thread, around one chunk of the current job.
    struct ChunkClock {
        std::chrono::steady_clock::time_point wall;
        int64_t cpu_ns;
    };
    ChunkClock chunk_begin() const;
    void chunk_end(int thread, const ChunkClock& begin);

private:
    struct alignas(64) ThreadSlot {
        int64_t busy_ns = 0;
        int64_t busy_cpu_ns = 0;
        int64_t chunks = 0;
        int64_t first_start_ns = -1;  // since job_begin
        int64_t last_end_ns = -1;
    };
    struct Site {
        int64_t calls = 0;
        int64_t dispatched = 0;
        int64_t wall_ns = 0;
        int64_t busy_ns = 0;
        int64_t busy_cpu_ns = 0;
        int64_t chunks = 0;
        int64_t start_latency_ns = 0;  // until the last working thread's first chunk
        int64_t tail_ns = 0;           // after the first working thread's last chunk
    };

    int n_threads_;
    std::vector<ThreadSlot> slots_;
    std::chrono::steady_clock::time_point job_start_{};
    std::chrono::steady_clock::time_point last_job_end_{};
    bool any_job_ = false;
    int64_t between_jobs_ns_ = 0;
    std::map<std::string, Site> sites_;
};

}  // namespace cria::cpu
