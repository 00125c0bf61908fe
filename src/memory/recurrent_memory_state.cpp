// RecurrentMemory: checkpoints (rollback of a verify batch) and saved state.
#include <algorithm>
#include <cmath>
#include <string>

#include "cria/core/error.h"
#include "cria/memory/recurrent_memory.h"

namespace cria::memory {

void RecurrentMemory::copy_state_out(SeqId seq, float* dst) const {
    for (uint32_t l = 0; l < params_.n_layer; ++l) std::copy_n(state(l, seq), state_floats(), dst + l * state_floats());
}

void RecurrentMemory::copy_state_in(SeqId seq, const float* src) {
    for (uint32_t l = 0; l < params_.n_layer; ++l) std::copy_n(src + l * state_floats(), state_floats(), state(l, seq));
}

bool RecurrentMemory::checkpoint_begin(SeqId seq, int32_t n_positions) {
    check_seq(seq);
    Checkpoint& cp = checkpoints_[seq];
    if (cp.base >= 0 || n_positions < 0) return false;
    const size_t per_position = size_t{params_.n_layer} * state_floats();
    cp.base = cells_[seq].last + 1;
    cp.length = n_positions;
    cp.before.resize(per_position);
    copy_state_out(seq, cp.before.data());
    cp.positions.assign(per_position * static_cast<size_t>(n_positions), 0.0f);
    return true;
}

void RecurrentMemory::record_position(uint32_t layer, SeqId seq, int32_t pos) {
    const Checkpoint& cp = checkpoints_[seq];
    if (cp.base < 0 || pos < cp.base || pos - cp.base >= cp.length) return;
    const size_t at = (static_cast<size_t>(pos - cp.base) * params_.n_layer + layer) * state_floats();
    std::copy_n(state(layer, seq), state_floats(), checkpoints_[seq].positions.data() + at);
}

bool RecurrentMemory::checkpoint_commit(SeqId seq, int32_t n_accepted) {
    check_seq(seq);
    Checkpoint& cp = checkpoints_[seq];
    Cell& cell = cells_[seq];
    // Positions of the verify batch the state has actually absorbed.
    const int32_t done = cell.last < cp.base ? 0 : std::min(cell.last - cp.base + 1, cp.length);
    if (cp.base < 0 || n_accepted < 0 || n_accepted > done) return false;
    if (n_accepted < done) {
        const size_t per_position = size_t{params_.n_layer} * state_floats();
        if (n_accepted == 0)
            copy_state_in(seq, cp.before.data());
        else
            copy_state_in(seq, cp.positions.data() + static_cast<size_t>(n_accepted - 1) * per_position);
        cell.last = cp.base + n_accepted - 1;
        if (cell.last < cell.first) cell = Cell{};  // the batch started the sequence and nothing was accepted
    }
    cp = Checkpoint{};
    return true;
}

namespace {

struct RecurrentLoaded final : LoadedSequence {
    int32_t first = -1, last = -1;
    std::vector<float> state;  // every layer's state, layer after layer
};

}  // namespace

void RecurrentMemory::save_seq(SeqId seq, std::vector<Section>& out) const {
    check_seq(seq);
    const Cell& c = cells_[seq];
    ByteWriter w;
    for (uint32_t v : {params_.n_layer, params_.r_size, params_.s_size}) w.value(v);
    w.value(c.first);
    w.value(c.last);
    if (c.last >= 0) {
        std::vector<float> all(size_t{params_.n_layer} * state_floats());
        copy_state_out(seq, all.data());
        w.bytes(all.data(), all.size() * sizeof(float));
    }
    Section s;
    s.tag = kTag;
    s.version = kSectionVersion;
    s.payload = std::move(w.buffer());
    s.n_positions = c.last < 0 ? 0 : static_cast<size_t>(c.last - c.first + 1);
    out.push_back(std::move(s));
}

uint64_t RecurrentMemory::max_saved_bytes() const {
    return 5 * 4 + uint64_t{params_.n_layer} * state_floats() * sizeof(float);
}

std::unique_ptr<LoadedSequence> RecurrentMemory::read_seq(SeqId seq, std::span<const Section> sections,
                                                          const LoadLimits& limits) const {
    check_seq(seq);
    if (sections.size() != 1 || sections[0].tag != kTag)
        throw Error("the saved state has " + (sections.empty() ? std::string("no section") : "a " + tag_name(sections[0].tag) + " section") +
                    " where this memory expects " + tag_name(kTag));
    const Section& s = sections[0];
    if (s.version != kSectionVersion)
        throw Error("the saved " + tag_name(kTag) + " section has version " + std::to_string(s.version) +
                    "; this build reads version " + std::to_string(kSectionVersion));
    ByteReader r(s.payload.data(), s.payload.size(), "the saved " + tag_name(kTag) + " section");
    const auto n_layer = r.value<uint32_t>(), r_size = r.value<uint32_t>(), s_size = r.value<uint32_t>();
    if (n_layer != params_.n_layer || r_size != params_.r_size || s_size != params_.s_size)
        throw Error("the saved " + tag_name(kTag) + " section comes from another state layout");
    auto loaded = std::make_unique<RecurrentLoaded>();
    loaded->first = r.value<int32_t>();
    loaded->last = r.value<int32_t>();
    const bool empty = loaded->first == -1 && loaded->last == -1;
    if (!empty && (loaded->first < 0 || loaded->last < loaded->first))
        throw Error("the saved recurrent state is corrupt (positions out of order)");
    if (!empty && limits.max_positions > 0 && static_cast<uint32_t>(loaded->last) >= limits.max_positions)
        throw Error("the saved sequence has positions beyond the " + std::to_string(limits.max_positions) +
                    " allowed here");
    if (!empty) {
        loaded->state.resize(size_t{n_layer} * state_floats());
        r.bytes(loaded->state.data(), loaded->state.size() * sizeof(float));
        if (!std::all_of(loaded->state.begin(), loaded->state.end(), [](float v) { return std::isfinite(v); }))
            throw Error("the saved recurrent state is corrupt (not finite)");
    }
    if (r.left() != 0) throw Error("the saved " + tag_name(kTag) + " section has trailing bytes");
    return loaded;
}

void RecurrentMemory::load_seq(SeqId seq, LoadedSequence& in) {
    const auto& loaded = static_cast<RecurrentLoaded&>(in);
    clear_cell(seq);
    checkpoints_[seq] = Checkpoint{};
    if (loaded.last < 0) return;
    copy_state_in(seq, loaded.state.data());
    cells_[seq] = Cell{loaded.first, loaded.last};
}

}  // namespace cria::memory
