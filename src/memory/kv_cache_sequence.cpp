// Saving and restoring one sequence's cells (see KvCache::SequenceCells), as
// raw cells and as a saved-state section; checkpoints of a verify batch.
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
            // A cache whose values live in the keys (MLA's latent) has no value rows:
            // nothing to copy, and memcpy must not see their null buffer.
            if (v_cell_bytes_ > 0)
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
        order_[c] = 0;
        seqs_[c] = uint64_t{1} << seq;
        shift_[c] = 0;
        n_hi_ = std::max(n_hi_, c + 1);
        for (uint32_t l = 0; l < params_.n_layer; ++l) {
            std::memcpy(k_[l].data() + c * k_cell_bytes_, in.k[l].data() + i * k_cell_bytes_, k_cell_bytes_);
            // A cache whose values live in the keys (MLA's latent) has no value rows:
            // nothing to copy, and memcpy must not see their null buffer.
            if (v_cell_bytes_ > 0)
                std::memcpy(v_[l].data() + c * v_cell_bytes_, in.v[l].data() + i * v_cell_bytes_, v_cell_bytes_);
        }
    }
    plans_[0].valid = plans_[1].valid = false;
}


bool KvCache::checkpoint_begin(SeqId seq, int32_t n_positions) {
    check_seq(seq);
    Checkpoint& cp = checkpoints_[seq];
    if (cp.base >= 0 || n_positions < 0) return false;
    cp.base = seq_pos_max(seq) + 1;
    cp.length = n_positions;
    return true;
}

bool KvCache::checkpoint_commit(SeqId seq, int32_t n_accepted) {
    check_seq(seq);
    Checkpoint& cp = checkpoints_[seq];
    if (cp.base < 0 || n_accepted < 0 || n_accepted > cp.length) return false;
    seq_rm(seq, cp.base + n_accepted, -1);
    cp = Checkpoint{};
    return true;
}

namespace {

struct KvLoaded final : LoadedSequence {
    KvCache::SequenceCells cells;
};

}  // namespace

void KvCache::save_seq(SeqId seq, std::vector<Section>& out) const {
    const SequenceCells cells = seq_save(seq);
    const auto n = static_cast<uint32_t>(cells.positions.size());
    ByteWriter w;
    size_t payload = 6 * sizeof(uint32_t) + n * sizeof(int32_t);
    for (uint32_t l = 0; l < params_.n_layer; ++l) payload += cells.k[l].size() + cells.v[l].size();
    w.reserve_more(payload);
    for (uint32_t v : {params_.n_layer, static_cast<uint32_t>(k_cell_bytes_), static_cast<uint32_t>(v_cell_bytes_),
                       params_.n_swa, params_.n_chunk, n})
        w.value(v);
    w.bytes(cells.positions.data(), n * sizeof(int32_t));
    for (uint32_t l = 0; l < params_.n_layer; ++l) {
        w.bytes(cells.k[l].data(), cells.k[l].size());
        w.bytes(cells.v[l].data(), cells.v[l].size());
    }
    Section s;
    s.tag = section_tag();
    s.version = kSectionVersion;
    s.payload = std::move(w.buffer());
    s.n_positions = n;
    out.push_back(std::move(s));
}

uint32_t KvCache::section_tag() const {
    return params_.n_swa > 0 ? kTagWindow : params_.n_chunk > 0 ? kTagChunked : kTagFull;
}

uint64_t KvCache::max_saved_bytes() const {
    return 6 * 4 + uint64_t{params_.n_cells} * (4 + uint64_t{params_.n_layer} * (k_cell_bytes_ + v_cell_bytes_));
}

std::unique_ptr<LoadedSequence> KvCache::read_seq(SeqId seq, std::span<const Section> sections,
                                                  const LoadLimits& limits) const {
    check_seq(seq);
    const uint32_t tag = section_tag();
    if (sections.size() != 1 || sections[0].tag != tag)
        throw Error("the saved state has " + (sections.empty() ? std::string("no section") : "a " + tag_name(sections[0].tag) + " section") +
                    " where this memory expects " + tag_name(tag));
    const Section& s = sections[0];
    if (s.version != kSectionVersion)
        throw Error("the saved " + tag_name(tag) + " section has version " + std::to_string(s.version) +
                    "; this build reads version " + std::to_string(kSectionVersion));
    ByteReader r(s.payload.data(), s.payload.size(), "the saved " + tag_name(tag) + " section");
    const auto n_layer = r.value<uint32_t>(), k_bytes = r.value<uint32_t>(), v_bytes = r.value<uint32_t>();
    const auto n_swa = r.value<uint32_t>(), n_chunk = r.value<uint32_t>(), n_cells = r.value<uint32_t>();
    if (n_layer != params_.n_layer || k_bytes != k_cell_bytes_ || v_bytes != v_cell_bytes_ || n_swa != params_.n_swa ||
        n_chunk != params_.n_chunk)
        throw Error("the saved " + tag_name(tag) + " section comes from another cache layout");
    if (n_cells > params_.n_cells) throw Error("the saved sequence holds more cells than the cache has");
    auto loaded = std::make_unique<KvLoaded>();
    SequenceCells& cells = loaded->cells;
    cells.positions.resize(n_cells);
    r.bytes(cells.positions.data(), n_cells * sizeof(int32_t));
    for (uint32_t c = 0; c < n_cells; ++c)
        if (cells.positions[c] < 0 || (c > 0 && cells.positions[c] <= cells.positions[c - 1]))
            throw Error("the saved sequence is corrupt (positions out of order)");
    if (limits.max_positions > 0 && n_cells > 0 && static_cast<uint32_t>(cells.positions.back()) >= limits.max_positions)
        throw Error("the saved sequence has positions beyond the " + std::to_string(limits.max_positions) +
                    " allowed here");
    cells.k.resize(n_layer);
    cells.v.resize(n_layer);
    for (uint32_t l = 0; l < n_layer; ++l) {
        cells.k[l].resize(size_t{n_cells} * k_cell_bytes_);
        cells.v[l].resize(size_t{n_cells} * v_cell_bytes_);
        r.bytes(cells.k[l].data(), cells.k[l].size());
        r.bytes(cells.v[l].data(), cells.v[l].size());
    }
    if (r.left() != 0) throw Error("the saved " + tag_name(tag) + " section has trailing bytes");
    if (!seq_load_fits(seq, n_cells)) throw Error("the cache has no room for the saved sequence");
    return loaded;
}

void KvCache::load_seq(SeqId seq, LoadedSequence& loaded) { seq_load(seq, static_cast<KvLoaded&>(loaded).cells); }

}  // namespace cria::memory
