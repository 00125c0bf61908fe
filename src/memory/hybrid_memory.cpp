#include "cria/memory/hybrid_memory.h"

#include <algorithm>
#include <string>

#include "cria/core/error.h"

namespace cria::memory {
namespace {

// The number of layers a leaf memory holds (0 for a memory the router does not know).
uint32_t layers_of(const Memory& m) {
    if (const auto* kv = dynamic_cast<const KvCache*>(&m)) return kv->params().n_layer;
    if (const auto* rec = dynamic_cast<const RecurrentMemory*>(&m)) return rec->params().n_layer;
    return 0;
}

}  // namespace

HybridMemory::HybridMemory(std::vector<std::unique_ptr<Memory>> children, const std::vector<LayerPlacement>& layers)
    : children_(std::move(children)) {
    if (children_.empty()) throw Error("hybrid memory: it needs at least one memory");
    model_layers_.resize(children_.size());
    for (size_t c = 0; c < children_.size(); ++c) {
        if (!children_[c]) throw Error("hybrid memory: a child memory is missing");
        const uint32_t n = layers_of(*children_[c]);
        model_layers_[c].assign(n, UINT32_MAX);
    }
    for (uint32_t l = 0; l < layers.size(); ++l) {
        const LayerPlacement& p = layers[l];
        if (p.child == kHeldElsewhere) {
            layers_.push_back(LayerSlot{});
            continue;
        }
        if (p.child >= children_.size() || p.index >= model_layers_[p.child].size())
            throw Error("hybrid memory: layer " + std::to_string(l) + " is placed outside its memory");
        if (model_layers_[p.child][p.index] != UINT32_MAX)
            throw Error("hybrid memory: layers " + std::to_string(model_layers_[p.child][p.index]) + " and " +
                        std::to_string(l) + " share a place");
        model_layers_[p.child][p.index] = l;
        Memory* m = children_[p.child].get();
        LayerSlot slot{m, p.index, dynamic_cast<KvCache*>(m), dynamic_cast<RecurrentMemory*>(m), p.index};
        if (p.state_child != kNoChild) {
            if (p.state_child >= children_.size() || p.state_index >= model_layers_[p.state_child].size())
                throw Error("hybrid memory: the state of layer " + std::to_string(l) + " is placed outside its memory");
            slot.recurrent = dynamic_cast<RecurrentMemory*>(children_[p.state_child].get());
            if (slot.recurrent == nullptr || p.state_child == p.child)
                throw Error("hybrid memory: the second place of layer " + std::to_string(l) +
                            " must be in another, recurrent memory");
            if (model_layers_[p.state_child][p.state_index] != UINT32_MAX)
                throw Error("hybrid memory: layers " + std::to_string(model_layers_[p.state_child][p.state_index]) +
                            " and " + std::to_string(l) + " share a place");
            model_layers_[p.state_child][p.state_index] = l;
            slot.recurrent_index = p.state_index;
        }
        layers_.push_back(slot);
    }
}

void HybridMemory::clear() {
    for (auto& c : children_) c->clear();
    for (Checkpoint& cp : checkpoints_) cp = Checkpoint{};
    report({SequenceOp::Kind::Clear}, true);
}

bool HybridMemory::can_seq_rm(SeqId seq, int32_t p0, int32_t p1) const {
    return std::all_of(children_.begin(), children_.end(), [&](const auto& c) { return c->can_seq_rm(seq, p0, p1); });
}
bool HybridMemory::can_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) const {
    return std::all_of(children_.begin(), children_.end(),
                       [&](const auto& c) { return c->can_seq_cp(src, dst, p0, p1); });
}
bool HybridMemory::can_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) const {
    return std::all_of(children_.begin(), children_.end(),
                       [&](const auto& c) { return c->can_seq_add(seq, p0, p1, delta); });
}

// Each mutating operation: ask every child first, then apply to all (a
// child that said it can does not refuse).
bool HybridMemory::seq_rm(SeqId seq, int32_t p0, int32_t p1) {
    const SequenceOp op{SequenceOp::Kind::Remove, seq, 0, p0, p1};
    if (!can_seq_rm(seq, p0, p1)) return report(op, false);
    bool ok = true;
    for (auto& c : children_) ok = c->seq_rm(seq, p0, p1) && ok;
    return report(op, ok);
}
bool HybridMemory::seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) {
    const SequenceOp op{SequenceOp::Kind::Copy, src, dst, p0, p1};
    if (!can_seq_cp(src, dst, p0, p1)) return report(op, false);
    bool ok = true;
    for (auto& c : children_) ok = c->seq_cp(src, dst, p0, p1) && ok;
    return report(op, ok);
}
bool HybridMemory::seq_keep(SeqId seq) {
    bool ok = true;
    for (auto& c : children_) ok = c->seq_keep(seq) && ok;
    return report({SequenceOp::Kind::Keep, seq}, ok);
}
bool HybridMemory::seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) {
    const SequenceOp op{SequenceOp::Kind::Add, seq, 0, p0, p1, delta};
    if (!can_seq_add(seq, p0, p1, delta)) return report(op, false);
    bool ok = true;
    for (auto& c : children_) ok = c->seq_add(seq, p0, p1, delta) && ok;
    return report(op, ok);
}

int32_t HybridMemory::seq_pos_min(SeqId seq) const {
    int32_t p = -1;
    for (const auto& c : children_) {
        const int32_t q = c->seq_pos_min(seq);
        if (q >= 0) p = p < 0 ? q : std::min(p, q);
    }
    return p;
}
int32_t HybridMemory::seq_pos_max(SeqId seq) const {
    int32_t p = -1;
    for (const auto& c : children_) p = std::max(p, c->seq_pos_max(seq));
    return p;
}

Split HybridMemory::split(const UbatchView& batch, uint32_t n_ubatch) const {
    // Every child checks the batch; a child that regroups it decides.
    Split chosen;
    bool have = false;
    for (const auto& c : children_) {
        Split s = c->split(batch, n_ubatch);
        if (!have || (chosen.in_order && !s.in_order)) {
            chosen = std::move(s);
            have = true;
        }
    }
    return chosen;
}

bool HybridMemory::place(const UbatchView& ubatch) {
    for (size_t i = 0; i < children_.size(); ++i)
        if (!children_[i]->place(ubatch)) {
            for (size_t j = 0; j < i; ++j) children_[j]->unplace();
            return false;
        }
    return true;
}

void HybridMemory::unplace() {
    for (auto& c : children_) c->unplace();
}

bool HybridMemory::has_shift() const {
    return std::any_of(children_.begin(), children_.end(), [](const auto& c) { return c->has_shift(); });
}

void HybridMemory::apply_shift(ops::Ops& ops, const std::function<ops::RopeParams(uint32_t layer)>& rope_for_layer) {
    for (size_t c = 0; c < children_.size(); ++c) {
        if (!children_[c]->has_shift()) continue;
        const auto& model_layer = model_layers_[c];
        children_[c]->apply_shift(ops, [&](uint32_t i) { return rope_for_layer(model_layer[i]); });
    }
}

bool HybridMemory::checkpoint_begin(SeqId seq, int32_t n_positions) {
    const SequenceOp op{SequenceOp::Kind::CheckpointBegin, seq, 0, 0, 0, n_positions};
    if (seq < 0 || seq >= kMaxSequences || n_positions < 0 || checkpoints_[seq].base >= 0) return report(op, false);
    for (size_t i = 0; i < children_.size(); ++i)
        if (!children_[i]->checkpoint_begin(seq, n_positions)) {
            // Nothing was decoded since: committing nothing closes the ones opened.
            for (size_t j = 0; j < i; ++j) children_[j]->checkpoint_commit(seq, 0);
            return report(op, false);
        }
    checkpoints_[seq] = Checkpoint{seq_pos_max(seq) + 1, n_positions};
    return report(op, true);
}

bool HybridMemory::checkpoint_commit(SeqId seq, int32_t n_accepted) {
    const SequenceOp op{SequenceOp::Kind::CheckpointCommit, seq, 0, 0, 0, n_accepted};
    if (seq < 0 || seq >= kMaxSequences) return report(op, false);
    Checkpoint& cp = checkpoints_[seq];
    const int32_t decoded = std::max(0, seq_pos_max(seq) - cp.base + 1);
    if (cp.base < 0 || n_accepted < 0 || n_accepted > std::min(cp.length, decoded)) return report(op, false);
    bool ok = true;
    for (auto& c : children_) ok = c->checkpoint_commit(seq, n_accepted) && ok;
    cp = Checkpoint{};
    return report(op, ok);
}

size_t HybridMemory::n_sections() const {
    size_t n = 0;
    for (const auto& c : children_) n += c->n_sections();
    return n;
}

void HybridMemory::save_seq(SeqId seq, std::vector<Section>& out) const {
    for (const auto& c : children_) c->save_seq(seq, out);
}

namespace {

struct HybridLoaded final : LoadedSequence {
    std::vector<std::unique_ptr<LoadedSequence>> children;
};

}  // namespace

std::unique_ptr<LoadedSequence> HybridMemory::read_seq(SeqId seq, std::span<const Section> sections,
                                                       const LoadLimits& limits) const {
    if (sections.size() != n_sections())
        throw Error("the saved state has " + std::to_string(sections.size()) + " sections; this memory has " +
                    std::to_string(n_sections()));
    auto loaded = std::make_unique<HybridLoaded>();
    size_t at = 0;
    for (const auto& c : children_) {
        const size_t n = c->n_sections();
        loaded->children.push_back(c->read_seq(seq, sections.subspan(at, n), limits));
        at += n;
    }
    return loaded;
}

void HybridMemory::load_seq(SeqId seq, LoadedSequence& in) {
    auto& loaded = static_cast<HybridLoaded&>(in);
    for (size_t i = 0; i < children_.size(); ++i) children_[i]->load_seq(seq, *loaded.children[i]);
    if (seq >= 0 && seq < kMaxSequences) checkpoints_[seq] = Checkpoint{};
}

uint64_t HybridMemory::max_saved_bytes() const {
    uint64_t n = 0;
    for (const auto& c : children_) n += c->max_saved_bytes();
    return n;
}

size_t HybridMemory::memory_bytes() const {
    size_t n = 0;
    for (const auto& c : children_) n += c->memory_bytes();
    return n;
}

}  // namespace cria::memory
