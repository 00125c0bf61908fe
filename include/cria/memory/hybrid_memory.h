#pragma once
// HybridMemory: the memory of a whole model. It owns the leaf memories (KV
// caches, sliding-window caches, recurrent states) and the layer -> memory
// map: which model layer lives in which memory, at which index there.
//
// Every sequence operation goes to every child. One that a child would
// refuse is refused as a whole before any child changes (the router asks
// every child's can_* first), so a refusal never leaves the children half
// applied. Positions: seq_pos_max is the highest of the children,
// seq_pos_min the lowest of the children that hold the sequence (a full
// cache remembers more than a window). Micro-batches follow the strictest
// child: when one needs whole sequences per step (recurrent), every child
// gets that split. Saved state: the children's sections, in child order.
//
// The attention hot path does not go through the router's virtual calls:
// layer(l).kv is the KV cache of layer l (null for a recurrent layer), which
// the runtime calls directly; layer(l).recurrent its recurrent state (null
// for an attention layer). A layer may have both (falcon-h1).

#include <cstdint>
#include <memory>
#include <vector>

#include "cria/memory/kv_cache.h"
#include "cria/memory/memory.h"
#include "cria/memory/recurrent_memory.h"
#include "cria/memory/sequence_op.h"

namespace cria::memory {

class HybridMemory final : public Memory {
public:
    static constexpr uint32_t kNoChild = UINT32_MAX;
    // A layer that another process of a pipeline holds (its slot is empty:
    // no memory, no cache); this memory still tracks the cells of every
    // sequence, so its answers are the other processes'.
    static constexpr uint32_t kHeldElsewhere = UINT32_MAX;
    struct LayerPlacement {
        uint32_t child = 0;  // index into the children, or kHeldElsewhere
        uint32_t index = 0;  // the layer's index inside that child
        // A layer that keeps a recurrent state beside its KV cache
        // (falcon-h1: attention and a Mamba-2 mixer in parallel) has a
        // second place, in a recurrent memory; kNoChild: none.
        uint32_t state_child = kNoChild;
        uint32_t state_index = 0;
    };
    struct LayerSlot {
        Memory* memory = nullptr;
        uint32_t index = 0;
        KvCache* kv = nullptr;                // memory, when it is a KV cache
        RecurrentMemory* recurrent = nullptr;  // memory, when it is a recurrent state, or the second place's
        uint32_t recurrent_index = 0;          // the layer's index inside `recurrent`
    };

    // Throws cria::Error for no children, a placement naming a missing child
    // or a layer index beyond the child's layers, two model layers at the
    // same place, or a second place that is not in a recurrent memory.
    HybridMemory(std::vector<std::unique_ptr<Memory>> children, const std::vector<LayerPlacement>& layers);

    uint32_t n_layer() const { return static_cast<uint32_t>(layers_.size()); }
    const LayerSlot& layer(uint32_t model_layer) const { return layers_[model_layer]; }
    size_t n_children() const { return children_.size(); }
    Memory& child(size_t i) { return *children_[i]; }
    const Memory& child(size_t i) const { return *children_[i]; }

    // Told of every later mutating sequence operation (null: none). The
    // observer must outlive the memory or be reset first.
    void set_observer(SequenceObserver* observer) { observer_ = observer; }
    SequenceObserver* observer() const { return observer_; }

    void clear() override;
    bool seq_rm(SeqId seq, int32_t p0, int32_t p1) override;
    bool seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) override;
    bool seq_keep(SeqId seq) override;
    bool seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) override;
    int32_t seq_pos_min(SeqId seq) const override;
    int32_t seq_pos_max(SeqId seq) const override;
    bool can_seq_rm(SeqId seq, int32_t p0, int32_t p1) const override;
    bool can_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) const override;
    bool can_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) const override;

    Split split(const UbatchView& batch, uint32_t n_ubatch) const override;
    // Places in every child; when one has no room, the others give their cells back.
    bool place(const UbatchView& ubatch) override;
    void unplace() override;

    bool has_shift() const override;
    // rope_for_layer takes a model layer here (the router maps each child's layers).
    void apply_shift(ops::Ops& ops, const std::function<ops::RopeParams(uint32_t layer)>& rope_for_layer) override;

    // begin opens a checkpoint in every child; commit checks the accepted
    // length against the open checkpoint and what was decoded since, then
    // commits every child.
    bool checkpoint_begin(SeqId seq, int32_t n_positions) override;
    bool checkpoint_commit(SeqId seq, int32_t n_accepted) override;

    size_t n_sections() const override;
    void save_seq(SeqId seq, std::vector<Section>& out) const override;
    std::unique_ptr<LoadedSequence> read_seq(SeqId seq, std::span<const Section> sections,
                                             const LoadLimits& limits) const override;
    void load_seq(SeqId seq, LoadedSequence& loaded) override;
    uint64_t max_saved_bytes() const override;
    size_t memory_bytes() const override;

private:
    struct Checkpoint {
        int32_t base = -1;  // -1: none open
        int32_t length = 0;
    };
    std::vector<std::unique_ptr<Memory>> children_;
    std::vector<LayerSlot> layers_;
    std::vector<std::vector<uint32_t>> model_layers_;  // per child: its layer index -> model layer
    Checkpoint checkpoints_[kMaxSequences];
    SequenceObserver* observer_ = nullptr;
    // Reports op (with the answer already computed) to the observer.
    bool report(const SequenceOp& op, bool answer) {
        if (observer_ != nullptr) observer_->applied(op);
        return answer;
    }
};

}  // namespace cria::memory
