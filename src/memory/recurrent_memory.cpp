// RecurrentMemory: cells, sequence operations and micro-batches.
#include "cria/memory/recurrent_memory.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "cria/core/error.h"

namespace cria::memory {

RecurrentMemory::RecurrentMemory(const RecurrentParams& p) : params_(p) {
    // n_layer 0: a pipeline rank holding none of these layers (it still tracks the sequences).
    if (p.r_size + uint64_t{p.s_size} == 0)
        throw Error("recurrent memory: it needs layers and a state");
    if (p.n_seq_max == 0 || p.n_seq_max > static_cast<uint32_t>(kMaxSequences))
        throw Error("recurrent memory: n_seq_max must be within 1.." + std::to_string(kMaxSequences));
    layers_.assign(p.n_layer, std::vector<float>(state_floats() * p.n_seq_max, 0.0f));
    cells_.assign(p.n_seq_max, Cell{});
    checkpoints_.resize(p.n_seq_max);
}

size_t RecurrentMemory::memory_bytes() const {
    return size_t{params_.n_layer} * params_.n_seq_max * state_floats() * sizeof(float);
}

void RecurrentMemory::check_seq(SeqId seq) const {
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("recurrent memory: sequence id " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
}

void RecurrentMemory::clear_cell(SeqId seq) {
    cells_[seq] = Cell{};
    for (uint32_t l = 0; l < params_.n_layer; ++l) std::fill_n(state(l, seq), state_floats(), 0.0f);
}

void RecurrentMemory::clear() {
    for (SeqId s = 0; s < static_cast<SeqId>(params_.n_seq_max); ++s) {
        clear_cell(s);
        checkpoints_[s] = Checkpoint{};
    }
}

RecurrentMemory::Overlap RecurrentMemory::overlap(const Cell& cell, int32_t p0, int32_t p1) const {
    const int64_t lo = std::max(p0, 0), hi = p1 < 0 ? std::numeric_limits<int64_t>::max() : p1;
    if (cell.last < 0 || hi <= lo || lo > cell.last || hi <= cell.first) return Overlap::None;
    return lo <= cell.first && hi > cell.last ? Overlap::Whole : Overlap::Partial;
}

bool RecurrentMemory::can_seq_rm(SeqId seq, int32_t p0, int32_t p1) const {
    if (seq >= 0) {
        check_seq(seq);
        return overlap(cells_[seq], p0, p1) != Overlap::Partial;
    }
    return std::none_of(cells_.begin(), cells_.end(),
                        [&](const Cell& c) { return overlap(c, p0, p1) == Overlap::Partial; });
}

bool RecurrentMemory::seq_rm(SeqId seq, int32_t p0, int32_t p1) {
    if (!can_seq_rm(seq, p0, p1)) return false;
    for (SeqId s = 0; s < static_cast<SeqId>(params_.n_seq_max); ++s)
        if ((seq < 0 || s == seq) && overlap(cells_[s], p0, p1) == Overlap::Whole) clear_cell(s);
    return true;
}

bool RecurrentMemory::can_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) const {
    check_seq(src);
    check_seq(dst);
    return overlap(cells_[src], p0, p1) != Overlap::Partial;
}

bool RecurrentMemory::seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) {
    if (!can_seq_cp(src, dst, p0, p1)) return false;
    if (src == dst || overlap(cells_[src], p0, p1) == Overlap::None) return true;
    cells_[dst] = cells_[src];
    for (uint32_t l = 0; l < params_.n_layer; ++l) std::copy_n(state(l, src), state_floats(), state(l, dst));
    return true;
}

bool RecurrentMemory::seq_keep(SeqId seq) {
    check_seq(seq);
    for (SeqId s = 0; s < static_cast<SeqId>(params_.n_seq_max); ++s)
        if (s != seq) clear_cell(s);
    return true;
}

bool RecurrentMemory::can_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) const {
    check_seq(seq);
    const Cell& c = cells_[seq];
    switch (overlap(c, p0, p1)) {
        case Overlap::None: return true;
        case Overlap::Partial: return false;
        case Overlap::Whole: return static_cast<int64_t>(c.first) + delta >= 0;  // a state cannot lose its start
    }
    return false;
}

bool RecurrentMemory::seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) {
    if (!can_seq_add(seq, p0, p1, delta)) return false;
    Cell& c = cells_[seq];
    if (delta != 0 && overlap(c, p0, p1) == Overlap::Whole) {
        c.first += delta;
        c.last += delta;
    }
    return true;
}

int32_t RecurrentMemory::seq_pos_min(SeqId seq) const {
    check_seq(seq);
    return cells_[seq].first;
}

int32_t RecurrentMemory::seq_pos_max(SeqId seq) const {
    check_seq(seq);
    return cells_[seq].last;
}

Split RecurrentMemory::split(const UbatchView& batch, uint32_t n_ubatch) const {
    std::vector<int64_t> next(params_.n_seq_max);
    for (uint32_t s = 0; s < params_.n_seq_max; ++s) next[s] = cells_[s].last < 0 ? -1 : cells_[s].last + 1;
    for (int64_t i = 0; i < batch.n_tokens; ++i) {
        const uint64_t m = batch.seq_masks[i];
        if (std::popcount(m) != 1)
            throw Error("recurrent memory: a token must belong to exactly one sequence");
        const int s = std::countr_zero(m);
        if (static_cast<uint32_t>(s) >= params_.n_seq_max)
            throw Error("recurrent memory: sequence id " + std::to_string(s) + " is beyond n_seq_max");
        const int32_t p = batch.positions[i];
        if (next[s] >= 0 && p != next[s])
            throw Error("recurrent memory: sequence " + std::to_string(s) + " continues at position " +
                        std::to_string(next[s]) + ", not " + std::to_string(p));
        next[s] = int64_t{p} + 1;
    }
    return split_by_sequence(batch, n_ubatch);
}

bool RecurrentMemory::place(const UbatchView& ubatch) {
    placed_before_ = cells_;
    for (int64_t i = 0; i < ubatch.n_tokens; ++i) {
        const int s = std::countr_zero(ubatch.seq_masks[i]);
        if (ubatch.seq_masks[i] == 0 || static_cast<uint32_t>(s) >= params_.n_seq_max)
            throw Error("recurrent memory: a token must belong to one sequence below n_seq_max");
        Cell& c = cells_[s];
        if (c.first < 0) c.first = ubatch.positions[i];
        c.last = ubatch.positions[i];
    }
    return true;
}

void RecurrentMemory::unplace() {
    if (placed_before_.size() == cells_.size()) cells_ = placed_before_;
}

}  // namespace cria::memory
