#pragma once
// Whether this host can hold a rank's share of a model: its packed weights
// are anonymous memory (not page cache the kernel could drop), so a share
// larger than the memory available is refused at load, with both figures,
// instead of failing later. CRIA_RANK_MEMORY_MIB (when set) caps what each
// rank counts as available: room kept for the KV cache and activations, or
// a host shared with other work (mpirun passes it on; `-x` to other hosts).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cria/core/error.h"
#include "cria/model/model.h"

namespace cria::distributed {

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
inline uint64_t host_available_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

// CRIA_RANK_MEMORY_MIB in bytes; UINT64_MAX when not set.
inline uint64_t rank_memory_cap_bytes() {
    const char* cap = std::getenv("CRIA_RANK_MEMORY_MIB");
    if (cap == nullptr || *cap == '\0') return UINT64_MAX;
    char* end = nullptr;
    const unsigned long long mib = std::strtoull(cap, &end, 10);
    if (*end != '\0' || cap[0] < '0' || cap[0] > '9' || mib > (UINT64_MAX >> 20))
        throw Error("CRIA_RANK_MEMORY_MIB must be a number of MiB, not '" + std::string(cap) + "'");
    return static_cast<uint64_t>(mib) << 20;
}

// Throws cria::Error naming the layers, what they need and what the host has.
inline void check_fits(int rank, model::LayerRange layers, uint64_t need_bytes) {
    const uint64_t host = host_available_bytes(), cap = rank_memory_cap_bytes();
    // MemAvailable unknown (0) and no cap: nothing to check against.
    const bool capped = cap < host || (host == 0 && cap != UINT64_MAX);
    const uint64_t available = capped ? cap : host;
    if ((!capped && host == 0) || need_bytes <= available) return;
    const auto mib = [](uint64_t b) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
        return std::string(text);
    };
    throw Error("rank " + std::to_string(rank) + " cannot hold layers " + std::to_string(layers.begin) + ".." +
                std::to_string(layers.end - 1) + ": they need " + mib(need_bytes) + " of weights, " +
                (capped ? "this rank may use " + mib(available) + " (CRIA_RANK_MEMORY_MIB)"
                        : "this host has " + mib(available) + " available") +
                " (use more ranks or --layer-split)");
}

}  // namespace cria::distributed
