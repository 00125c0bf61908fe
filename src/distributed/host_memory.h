#pragma once
// Whether this host can hold a rank's share of a model: its packed weights
// are anonymous memory (not page cache the kernel could drop), so a share
// larger than the memory available is refused at load, with both figures,
// instead of failing later.

#include <cstdint>
#include <fstream>
#include <string>

#include "cria/core/error.h"
#include "cria/model/model.h"

namespace cria::distributed {

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
inline uint64_t available_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

// Throws cria::Error naming the layers, what they need and what the host has.
inline void check_fits(int rank, model::LayerRange layers, uint64_t need_bytes) {
    const uint64_t available = available_memory_bytes();
    if (available == 0 || need_bytes <= available) return;
    const auto mib = [](uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
    throw Error("rank " + std::to_string(rank) + " cannot hold layers " + std::to_string(layers.begin) + ".." +
                std::to_string(layers.end - 1) + ": they need " + mib(need_bytes) + " of weights, this host has " +
                mib(available) + " available (use more ranks or --layer-split)");
}

}  // namespace cria::distributed
