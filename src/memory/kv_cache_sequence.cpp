// Saving and restoring one sequence's cells (see KvCache::SequenceCells).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "cria/core/error.h"
#include "cria/memory/kv_cache.h"

namespace cria::memory {

KvCache::SequenceCells KvCache::seq_save(SeqId seq) const {
    check_seq(seq);
    std::vector<uint32_t> cells;
    for (uint32_t c = 0; c < params_.n_cells; ++c)
        if (seqs_[c] >> seq & 1) {
            // The stored keys are rotated for the old position until apply_shift().
            if (shift_[c] != 0) throw Error("KV cache: sequence " + std::to_string(seq) + " has a pending shift");
            cells.push_back(c);
        }
    std::sort(cells.begin(), cells.end(), [&](uint32_t a, uint32_t b) { return pos_[a] < pos_[b]; });
    SequenceCells out;
    out.positions.reserve(cells.size());
    for (uint32_t c : cells) out.positions.push_back(pos_[c]);
    out.k.resize(params_.n_layer);
    out.v.resize(params_.n_layer);
    for (uint32_t l = 0; l < params_.n_layer; ++l) {
        out.k[l].resize(cells.size() * k_cell_bytes_);
        out.v[l].resize(cells.size() * v_cell_bytes_);
        for (size_t i = 0; i < cells.size(); ++i) {
            std::memcpy(out.k[l].data() + i * k_cell_bytes_, k_[l].data() + cells[i] * k_cell_bytes_, k_cell_bytes_);
            std::memcpy(out.v[l].data() + i * v_cell_bytes_, v_[l].data() + cells[i] * v_cell_bytes_, v_cell_bytes_);
        }
    }
    return out;
}

bool KvCache::seq_load_fits(SeqId seq, size_t n) const {
    check_seq(seq);
    const uint64_t own = uint64_t{1} << seq;
    const auto usable = static_cast<size_t>(
        std::count_if(seqs_.begin(), seqs_.end(), [own](uint64_t s) { return s == 0 || s == own; }));
    return n <= usable;
}

void KvCache::seq_load(SeqId seq, const SequenceCells& in) {
    check_seq(seq);
    const size_t n = in.positions.size();
    if (in.k.size() != params_.n_layer || in.v.size() != params_.n_layer)
        throw Error("KV cache: the saved sequence has " + std::to_string(in.k.size()) + " layers, the cache " +
                    std::to_string(params_.n_layer));
    for (uint32_t l = 0; l < params_.n_layer; ++l)
        if (in.k[l].size() != n * k_cell_bytes_ || in.v[l].size() != n * v_cell_bytes_)
            throw Error("KV cache: the saved rows do not have this cache's sizes");
    for (size_t i = 0; i < n; ++i)
        if (in.positions[i] < 0 || (i > 0 && in.positions[i] <= in.positions[i - 1]))
            throw Error("KV cache: the saved positions are not strictly ascending from 0 or more");
    if (!seq_load_fits(seq, n))
        throw Error("KV cache: no room for " + std::to_string(n) + " cells of sequence " + std::to_string(seq));

    // Checked: from here on nothing fails. Drop the sequence, then take the
    // first run of n free cells (position order, so attention reads the
    // cache in place), else any free cells.
    seq_rm(seq, -1, -1);
    std::vector<uint32_t> cells;
    uint32_t run = 0;
    for (uint32_t c = 0; c < params_.n_cells && cells.empty() && n > 0; ++c) {
        run = seqs_[c] == 0 ? run + 1 : 0;
        if (run == n) {
            cells.resize(n);
            std::iota(cells.begin(), cells.end(), c + 1 - static_cast<uint32_t>(n));
        }
    }
    for (uint32_t c = 0; c < params_.n_cells && cells.size() < n; ++c)
        if (seqs_[c] == 0) cells.push_back(c);
    for (size_t i = 0; i < n; ++i) {
        const uint32_t c = cells[i];
        pos_[c] = in.positions[i];
        seqs_[c] = uint64_t{1} << seq;
        shift_[c] = 0;
        n_hi_ = std::max(n_hi_, c + 1);
        for (uint32_t l = 0; l < params_.n_layer; ++l) {
            std::memcpy(k_[l].data() + c * k_cell_bytes_, in.k[l].data() + i * k_cell_bytes_, k_cell_bytes_);
            std::memcpy(v_[l].data() + c * v_cell_bytes_, in.v[l].data() + i * v_cell_bytes_, v_cell_bytes_);
        }
    }
    plans_[0].valid = plans_[1].valid = false;
}

}  // namespace cria::memory
