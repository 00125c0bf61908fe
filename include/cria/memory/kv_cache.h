#pragma once
// The KV cache: keys and values of every token seen, kept in "cells" shared
// by all layers (llama.cpp's unified cache). A cell holds one token's K and V
// for every layer, its position, and the set of sequences it belongs to (a
// prompt shared by several sequences is stored once).
//
// Layout: per layer, K is [head_dim, n_head_kv, n_cells] and V is
// [head_dim_v, n_head_kv, n_cells] of the cache types (F16 by default; F32,
// BF16, Q8_0, Q4_0), so one cell's keys for all heads are contiguous bytes.
// With value_in_key (MLA) there is no V: its views are the first head_dim_v
// values of each K row, and a saved cell has V rows of 0 bytes.
//
// Attention and the mask (the design choice). The op API's attention takes
// no mask: keys are visible by index (causal j <= position, and a sliding
// window on index differences). Visibility here is per cell: a query of
// sequence s at position p sees the cells that belong to s with position <= p
// (and p - pos < n_swa on sliding-window layers). attend() works out that set
// for every query token of the micro-batch once per window kind, then:
//   1. Consecutive tokens whose visible cells are exactly the index range the
//      op would pick over cells base.. (base..p', or the window before p')
//      -- a sequence stored in position order, e.g. one sequence decoded
//      from an empty cache, or each prompt of a multi-sequence batch -- share
//      one attention call over a view of the cache from `base` (in place).
//   2. Any other token alone: a visible set that is one contiguous range of
//      cells is passed as a view (no copy, causal off); any other set is
//      gathered into scratch rows first (order is irrelevant to attention).
// So the common paths read the cache in place, and every other layout (many
// sequences, removed ranges, shifted positions, reused cells) stays exact.
// With chunked attention (n_chunk) every query is attended alone (step 2).
//
// As a memory::Memory it can do every sequence operation (they all return
// true), a checkpoint commit removes the rejected cells, and its saved state
// is one section ("KVAT" full attention, "KVSW" sliding window, "KVCH"
// chunked). The class is final and the runtime calls store()/attend()
// directly, so the attention hot path has no virtual dispatch.

#include <cstdint>
#include <functional>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/memory/memory.h"
#include "cria/ops/ops.h"

namespace cria::memory {

struct KvCacheParams {
    uint32_t n_cells = 0;
    uint32_t n_layer = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    uint32_t head_dim_v = 0;
    ElementType type_k = ElementType::F16;
    ElementType type_v = ElementType::F16;
    // > 0: only the last n_swa positions of each sequence are ever visible,
    // so older cells are freed before each micro-batch (a sliding-window cache).
    uint32_t n_swa = 0;
    // > 0: chunked attention (llama4): a query at p sees only the positions
    // of its own chunk [p - p % n_chunk, p]; earlier chunks are freed like a
    // window. Not together with n_swa.
    uint32_t n_chunk = 0;
    // The value of a token is the first head_dim_v values of its key row
    // (multi-head latent attention caches one latent per token that serves
    // as both): no V is stored, V views read the K rows (head_dim_v <=
    // head_dim, a whole number of the key type's blocks; type_v is unused).
    bool value_in_key = false;
    // Where the roped dimensions of each key head start (a context shift
    // rotates from there): 0, or after MLA's latent.
    uint32_t rope_first = 0;
};

class KvCache final : public Memory {
public:
    static constexpr uint32_t kTagFull = fourcc('K', 'V', 'A', 'T');
    static constexpr uint32_t kTagWindow = fourcc('K', 'V', 'S', 'W');
    static constexpr uint32_t kTagChunked = fourcc('K', 'V', 'C', 'H');
    static constexpr uint32_t kSectionVersion = 1;

    // Throws cria::Error for an unsupported cache type or a head size the
    // type's blocks do not divide.
    explicit KvCache(const KvCacheParams& params);

    const KvCacheParams& params() const { return params_; }
    uint32_t n_cells() const { return params_.n_cells; }
    uint32_t n_used() const;  // cells that belong to at least one sequence
    size_t memory_bytes() const override;

    // Places a micro-batch: picks a free cell for every token (a contiguous
    // run when there is one), marks them used with the token's position and
    // sequences. Returns false (and changes nothing) when there are not enough
    // free cells. The chosen cells are kept for store() and attend().
    bool place(const UbatchView& ubatch) override;
    void unplace() override;  // frees the cells of the last place()
    const std::vector<uint32_t>& placed_cells() const { return slots_; }

    // Writes the micro-batch's keys and values (F32 [head_dim, n_head_kv,
    // n_tokens] and [head_dim_v, n_head_kv, n_tokens]) of `layer` into its
    // cells. With value_in_key only K is written (v is not read, and may be
    // a strided view of k).
    void store(uint32_t layer, const ops::TensorView& k, const ops::TensorView& v);

    // Attention of the micro-batch's queries over the visible cells (see the
    // comment at the top). params.causal/window/positions are replaced by the
    // cell visibility; scale, softcap and sinks are passed on.
    void attend(ops::Ops& ops, uint32_t layer, const ops::TensorView& q, const ops::AttentionParams& params,
                uint32_t window, const ops::TensorView& out);

    // Sequence bookkeeping, as llama.cpp's llama_memory_seq_* (p1 < 0: to the
    // end; seq < 0 in seq_rm: every sequence).
    // All of them succeed (return true); a sequence id outside 0..63 throws.
    void clear() override;
    bool seq_rm(SeqId seq, int32_t p0, int32_t p1) override;
    bool seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) override;
    bool seq_keep(SeqId seq) override;
    // Adds delta to the positions in [p0, p1) of seq; cells whose position
    // becomes negative are removed. The keys must then be re-rotated with
    // apply_shift() before the next attention (context shift).
    bool seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) override;
    int32_t seq_pos_min(SeqId seq) const override;  // -1 when the sequence is empty
    int32_t seq_pos_max(SeqId seq) const override;  // -1 when the sequence is empty

    bool has_shift() const override { return has_shift_; }
    // Rotates the keys of every shifted cell by its accumulated delta: RoPE is
    // a rotation by an angle linear in the position, so rotating by the delta
    // equals rotating from scratch at the new position.
    void apply_shift(ops::Ops& ops, const std::function<ops::RopeParams(uint32_t layer)>& rope_for_layer) override;

    // A checkpoint remembers where the verify batch starts (the sequence's
    // highest position + 1); commit removes the cells past the accepted ones.
    bool checkpoint_begin(SeqId seq, int32_t n_positions) override;
    bool checkpoint_commit(SeqId seq, int32_t n_accepted) override;

    // One section: u32 n_layer, k_cell_bytes, v_cell_bytes, n_swa, n_chunk, n_cells,
    // i32 positions[n_cells], then per layer the K rows and the V rows.
    void save_seq(SeqId seq, std::vector<Section>& out) const override;
    std::unique_ptr<LoadedSequence> read_seq(SeqId seq, std::span<const Section> sections,
                                             const LoadLimits& limits) const override;
    void load_seq(SeqId seq, LoadedSequence& loaded) override;
    uint64_t max_saved_bytes() const override;

    // Saving and restoring one sequence (llama.cpp's llama_state_seq_*): its
    // cells in position order, each with its position and its raw K and V
    // rows in the cache types (k_cell_bytes() / v_cell_bytes() per layer and
    // cell), so a restore needs no forward pass.
    struct SequenceCells {
        std::vector<int32_t> positions;          // strictly ascending, >= 0
        std::vector<std::vector<uint8_t>> k, v;  // per layer: positions.size() cells' rows, cell after cell
    };
    size_t k_cell_bytes() const { return k_cell_bytes_; }
    size_t v_cell_bytes() const { return v_cell_bytes_; }
    // Throws cria::Error while the sequence has a pending shift (apply_shift() first).
    SequenceCells seq_save(SeqId seq) const;
    // Whether seq_load() of n cells fits once the sequence's own cells are dropped.
    bool seq_load_fits(SeqId seq, size_t n) const;
    // Replaces the sequence with saved cells. Throws cria::Error, leaving the
    // cache unchanged, when the rows do not have this cache's sizes, the
    // positions are not strictly ascending from >= 0, or the cells do not fit.
    void seq_load(SeqId seq, const SequenceCells& cells);

    // The position and sequence set of a cell (for tests).
    int32_t cell_pos(uint32_t cell) const { return pos_[cell]; }
    uint64_t cell_seqs(uint32_t cell) const { return seqs_[cell]; }

private:
    void check_seq(SeqId seq) const;
    void free_cell(uint32_t c);
    void prune_window();
    uint32_t section_tag() const;
    ops::TensorView k_view(uint32_t layer, uint32_t first, uint32_t count) const;
    ops::TensorView v_view(uint32_t layer, uint32_t first, uint32_t count) const;
    // The value rows inside key rows (value_in_key): a view of the first head_dim_v values of each.
    ops::TensorView value_prefix(const ops::TensorView& keys) const;

    // Visibility of each token of the current micro-batch for one window.
    struct Plan {
        bool valid = false;
        std::vector<uint32_t> lo, hi;       // contiguous range per token (hi < lo: empty)
        std::vector<uint8_t> contiguous;
        std::vector<uint32_t> gather_offsets, gather_cells;  // cells of non-contiguous tokens
    };
    const Plan& plan_for(uint32_t window);
    // Attention of token t alone: over a contiguous range in place, or over gathered cells.
    void attend_one(ops::Ops& ops, uint32_t layer, const ops::TensorView& q, const ops::AttentionParams& params,
                    int64_t t, const ops::TensorView& out);
    const Plan* current_plan_ = nullptr;
    std::vector<int32_t> run_positions_;

    KvCacheParams params_;
    size_t k_cell_bytes_ = 0, v_cell_bytes_ = 0, k_row_bytes_ = 0, v_row_bytes_ = 0;
    std::vector<std::vector<uint8_t>> k_, v_;  // per layer
    std::vector<int32_t> pos_;
    std::vector<int32_t> order_;  // order among cells at one position (UbatchView::orders); not saved
    std::vector<uint64_t> seqs_;
    std::vector<int32_t> shift_;
    bool has_shift_ = false;
    struct Checkpoint {
        int32_t base = -1;  // first position of the verify batch; -1: none open
        int32_t length = 0;
    };
    Checkpoint checkpoints_[kMaxSequences];
    uint32_t n_hi_ = 0;  // 1 + highest cell index ever used since clear (attention reads below it)

    UbatchView ubatch_;
    std::vector<int32_t> ub_pos_, ub_order_;
    std::vector<uint64_t> ub_seqs_;
    std::vector<uint32_t> slots_;
    Plan plans_[2];  // [0]: no window, [1]: the sliding window
    uint32_t plan_window_[2] = {0, 0};
    std::vector<float> convert_;           // F32 staging for quantizing rows
    std::vector<uint8_t> gather_k_, gather_v_;
};

}  // namespace cria::memory
