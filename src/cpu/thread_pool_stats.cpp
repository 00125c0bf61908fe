// CRIA_POOL_STATS: see thread_pool_stats.h.

#include "cpu/thread_pool_stats.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cria::cpu {
namespace {

int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t ns_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// "void cria::cpu::ThreadPool::parallel_for(int64_t, Fn&&, int64_t) [with Fn = X; ...]" -> "X": the
// lambda's type names the function that called parallel_for.
std::string site_name(const char* pretty) {
    std::string s(pretty);
    const size_t with = s.find("Fn = ");
    if (with != std::string::npos) s = s.substr(with + 5);
    for (const char* noise : {"cria::", "std::", "(anonymous namespace)::", "<lambda(int64_t, int)>"}) {
        for (size_t at = s.find(noise); at != std::string::npos; at = s.find(noise, at))
            s.erase(at, std::strlen(noise));
    }
    if (!s.empty() && s.back() == ']') s.pop_back();
    return s;
}

}  // namespace

ThreadPoolStats* ThreadPoolStats::create_if_enabled(int n_threads) {
    const char* env = std::getenv("CRIA_POOL_STATS");
    if (!env || !*env || std::strcmp(env, "0") == 0) return nullptr;
    return new ThreadPoolStats(n_threads);
}

ThreadPoolStats::ThreadPoolStats(int n_threads) : n_threads_(n_threads), slots_(static_cast<size_t>(n_threads)) {}

void ThreadPoolStats::job_begin() {
    job_start_ = std::chrono::steady_clock::now();
    if (any_job_) between_jobs_ns_ += ns_between(last_job_end_, job_start_);
    any_job_ = true;
    for (ThreadSlot& s : slots_) s = ThreadSlot{};
}

ThreadPoolStats::ChunkClock ThreadPoolStats::chunk_begin() const {
    return ChunkClock{std::chrono::steady_clock::now(), thread_cpu_ns()};
}

void ThreadPoolStats::chunk_end(int thread, const ChunkClock& begin) {
    const auto now = std::chrono::steady_clock::now();
    ThreadSlot& s = slots_[static_cast<size_t>(thread)];
    s.busy_ns += ns_between(begin.wall, now);
    s.busy_cpu_ns += thread_cpu_ns() - begin.cpu_ns;
    ++s.chunks;
    if (s.first_start_ns < 0) s.first_start_ns = ns_between(job_start_, begin.wall);
    s.last_end_ns = ns_between(job_start_, now);
}

void ThreadPoolStats::job_end(const char* site, bool dispatched) {
    last_job_end_ = std::chrono::steady_clock::now();
    const int64_t wall = ns_between(job_start_, last_job_end_);
    Site& st = sites_[site_name(site)];
    ++st.calls;
    st.dispatched += dispatched ? 1 : 0;
    st.wall_ns += wall;
    int64_t latest_start = 0, earliest_end = wall;
    bool worked = false;
    for (const ThreadSlot& s : slots_) {
        st.busy_ns += s.busy_ns;
        st.busy_cpu_ns += s.busy_cpu_ns;
        st.chunks += s.chunks;
        if (s.chunks == 0) continue;
        worked = true;
        latest_start = std::max(latest_start, s.first_start_ns);
        earliest_end = std::min(earliest_end, s.last_end_ns);
    }
    if (worked && dispatched) {
        st.start_latency_ns += latest_start;
        st.tail_ns += wall - earliest_end;
    }
}

ThreadPoolStats::~ThreadPoolStats() {
    std::vector<std::pair<std::string, Site>> rows(sites_.begin(), sites_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.wall_ns > b.second.wall_ns; });
    int64_t wall = 0, busy = 0, cpu = 0;
    for (const auto& [name, s] : rows) {
        wall += s.wall_ns;
        busy += s.busy_ns;
        cpu += s.busy_cpu_ns;
    }
    const double ms = 1e-6;
    std::fprintf(stderr,
                 "pool stats (%d threads): jobs %.1f ms wall, chunks %.1f ms busy (%.1f ms CPU), idle in jobs %.1f%%, "
                 "caller between jobs %.1f ms\n",
                 n_threads_, wall * ms, busy * ms, cpu * ms,
                 wall > 0 ? 100.0 * (1.0 - static_cast<double>(busy) / (static_cast<double>(wall) * n_threads_)) : 0.0,
                 between_jobs_ns_ * ms);
    std::fprintf(stderr, "%9s %9s %10s %10s %10s %6s %9s %9s  %s\n", "calls", "dispatch", "wall_ms", "busy_ms", "cpu_ms",
                 "idle%", "start_ms", "tail_ms", "site");
    for (const auto& [name, s] : rows) {
        const double idle =
            s.wall_ns > 0 ? 100.0 * (1.0 - static_cast<double>(s.busy_ns) / (static_cast<double>(s.wall_ns) * n_threads_)) : 0.0;
        std::fprintf(stderr, "%9lld %9lld %10.2f %10.2f %10.2f %6.1f %9.2f %9.2f  %.160s\n", static_cast<long long>(s.calls),
                     static_cast<long long>(s.dispatched), s.wall_ns * ms, s.busy_ns * ms, s.busy_cpu_ns * ms, idle,
                     s.start_latency_ns * ms, s.tail_ns * ms, name.c_str());
    }
}

}  // namespace cria::cpu
