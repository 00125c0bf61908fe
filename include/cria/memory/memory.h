#pragma once
// memory::Memory: what a model keeps between decode() calls, as an interface
// (llama.cpp's llama_memory_i). Implementations: KvCache (full attention, or
// a sliding window when n_swa > 0), RecurrentMemory (a fixed-size state per
// sequence) and HybridMemory (a router that owns the layer -> memory map and
// fans every operation out to its children).
//
// Sequence operations follow llama.cpp's llama_memory_seq_* (p1 < 0: to the
// end; p0 < 0: from 0; seq < 0 in seq_rm: every sequence). The mutating ones
// return false, changing nothing, when the memory cannot do them: a recurrent
// state holds a whole history and cannot drop part of it. Every can_* query
// answers the same question without changing anything, so a router can ask
// all children before it applies an operation to any of them.
//
// Checkpoints (speculative decoding): checkpoint_begin(seq, n) announces that
// the next n positions of seq form a verify batch; checkpoint_commit(seq, a)
// keeps the first a of them and forgets the rest. A KV cache just removes the
// rejected cells; a recurrent memory keeps its state after every position of
// the verify batch and restores the accepted one (llama.cpp's
// recurrent-state rollback).
//
// Saved state: a sequence's state is written as sections (memory/state_section.h),
// one per leaf memory, so any mix of memories can be saved and restored.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "cria/memory/state_section.h"
#include "cria/ops/ops.h"

namespace cria::memory {

using SeqId = int32_t;
inline constexpr SeqId kMaxSequences = 64;

// The tokens of a batch or micro-batch as a memory sees them.
struct UbatchView {
    int64_t n_tokens = 0;
    const int32_t* positions = nullptr;
    const uint64_t* seq_masks = nullptr;  // bit s set: the token belongs to sequence s
    // Order among a sequence's tokens at one position (null: all 0). An
    // M-RoPE image puts all its tokens at one position (llama.cpp's
    // temporal section); their raster index keeps attention causal among
    // them, as llama.cpp's 2-D cell positions do.
    const int32_t* orders = nullptr;
    // false: every token sees all cells of its sequence, later ones too
    // (llama_set_causal_attn(false): gemma3's image block attends both ways).
    bool causal = true;
};

// How a batch is cut into micro-batches: micro-batch u holds the batch
// entries order[bounds[u] .. bounds[u+1]). When in_order, order is left
// empty and means 0, 1, 2, ...: every micro-batch is a slice of the batch
// (the common case, which needs no gathering).
struct Split {
    bool in_order = true;
    std::vector<int32_t> order;
    std::vector<int64_t> bounds;  // n_ubatch + 1 entries, from 0 to n_tokens

    size_t n_ubatches() const { return bounds.empty() ? 0 : bounds.size() - 1; }
    int32_t entry(int64_t i) const { return in_order ? static_cast<int32_t>(i) : order[static_cast<size_t>(i)]; }
};

// Consecutive slices of at most n_ubatch tokens (attention memories).
Split split_consecutive(int64_t n_tokens, uint32_t n_ubatch);
// Micro-batches that each hold tokens of one sequence set only, in batch
// order (recurrent memories update one state per sequence, token by token).
Split split_by_sequence(const UbatchView& batch, uint32_t n_ubatch);

class Memory {
public:
    virtual ~Memory() = default;

    // Sequence operations (see the top). seq_keep always succeeds.
    virtual void clear() = 0;
    virtual bool seq_rm(SeqId seq, int32_t p0, int32_t p1) = 0;
    virtual bool seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) = 0;
    virtual bool seq_keep(SeqId seq) = 0;
    // Adds delta to the positions in [p0, p1) of seq (context shift).
    virtual bool seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) = 0;
    virtual int32_t seq_pos_min(SeqId seq) const = 0;  // -1 when the sequence is empty
    virtual int32_t seq_pos_max(SeqId seq) const = 0;  // -1 when the sequence is empty

    virtual bool can_seq_rm(SeqId, int32_t, int32_t) const { return true; }
    virtual bool can_seq_cp(SeqId, SeqId, int32_t, int32_t) const { return true; }
    virtual bool can_seq_add(SeqId, int32_t, int32_t, int32_t) const { return true; }

    // Micro-batches. split() cuts a batch (default: consecutive slices) and
    // throws cria::Error for a batch this memory cannot take at all (e.g.
    // positions that do not continue a recurrent state). place() takes the
    // cells of one micro-batch; false (nothing changed) when there is no room.
    // unplace() gives back what the last place() took, when another memory
    // refused the same micro-batch.
    virtual Split split(const UbatchView& batch, uint32_t n_ubatch) const;
    virtual bool place(const UbatchView& ubatch) = 0;
    virtual void unplace() = 0;

    // Positions that were shifted by seq_add() and whose stored state must be
    // re-rotated before use (RoPE'd keys). rope_for_layer takes this memory's
    // layer index.
    virtual bool has_shift() const { return false; }
    virtual void apply_shift(ops::Ops&, const std::function<ops::RopeParams(uint32_t layer)>&) {}

    // Checkpoints (see the top). begin: false when a checkpoint of seq is
    // already open. commit: false (nothing changed) when none is open or
    // n_accepted exceeds its length.
    virtual bool checkpoint_begin(SeqId seq, int32_t n_positions) = 0;
    virtual bool checkpoint_commit(SeqId seq, int32_t n_accepted) = 0;

    // Saved state. save_seq appends this memory's sections for seq (throws
    // cria::Error when the state cannot be saved now). read_seq checks
    // n_sections() sections written by save_seq -- tag, version, sizes,
    // limits, and that they fit -- and throws cria::Error for anything else,
    // changing nothing; load_seq then replaces the sequence and cannot fail.
    virtual size_t n_sections() const { return 1; }
    virtual void save_seq(SeqId seq, std::vector<Section>& out) const = 0;
    virtual std::unique_ptr<LoadedSequence> read_seq(SeqId seq, std::span<const Section> sections,
                                                     const LoadLimits& limits) const = 0;
    virtual void load_seq(SeqId seq, LoadedSequence& loaded) = 0;
    // The most payload bytes save_seq could write for one sequence (bounds what a reader accepts).
    virtual uint64_t max_saved_bytes() const = 0;

    virtual size_t memory_bytes() const = 0;
};

}  // namespace cria::memory
