#pragma once
// Recurrent state (Mamba, RWKV, gated linear attention, ...): a fixed-size
// state per sequence, whatever its length. Every sequence has its own cell
// holding, per layer, a convolution state of r_size floats and an
// SSM / linear-attention state of s_size floats, and the span of positions
// [first, last] the state summarises.
//
// Because one state stands for a whole history, a recurrent memory can drop
// a sequence only entirely: removing (or shifting, or copying) part of its
// span is refused -- the operation returns false and changes nothing. To
// roll back a speculative verify batch, open a checkpoint before it: the
// recurrent layers call record_position() after they advance a state, the
// memory keeps that state per position, and checkpoint_commit() restores the
// state after the last accepted position.
//
// The state update itself belongs to the model's recurrent layers: they read
// and write conv_state()/ssm_state() of the sequences of the micro-batch
// (model::ForwardInput carries every token's sequences).

#include <cstdint>
#include <vector>

#include "cria/memory/memory.h"

namespace cria::memory {

struct RecurrentParams {
    uint32_t n_layer = 0;
    uint32_t r_size = 0;  // convolution state floats per layer and sequence
    uint32_t s_size = 0;  // SSM / linear-attention state floats per layer and sequence
    uint32_t n_seq_max = 1;
};

class RecurrentMemory final : public Memory {
public:
    static constexpr uint32_t kTag = fourcc('R', 'S', 'S', 'M');
    static constexpr uint32_t kSectionVersion = 1;

    // Throws cria::Error for zero layers, an empty state, or n_seq_max outside 1..64.
    explicit RecurrentMemory(const RecurrentParams& params);
    const RecurrentParams& params() const { return params_; }

    // The state of seq at `layer` (after its last position). seq must be < n_seq_max.
    float* conv_state(uint32_t layer, SeqId seq) { return state(layer, seq); }
    float* ssm_state(uint32_t layer, SeqId seq) { return state(layer, seq) + params_.r_size; }
    const float* conv_state(uint32_t layer, SeqId seq) const { return state(layer, seq); }
    const float* ssm_state(uint32_t layer, SeqId seq) const { return state(layer, seq) + params_.r_size; }
    // Called by a recurrent layer once it has advanced seq's state of `layer`
    // to position pos: inside an open checkpoint the state is kept for a commit.
    void record_position(uint32_t layer, SeqId seq, int32_t pos);
    // Whether a checkpoint of seq is open (then every position is worth recording).
    bool checkpoint_open(SeqId seq) const {
        return seq >= 0 && static_cast<uint32_t>(seq) < params_.n_seq_max && checkpoints_[seq].base >= 0;
    }

    void clear() override;
    bool seq_rm(SeqId seq, int32_t p0, int32_t p1) override;
    bool seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) override;  // replaces dst's state
    bool seq_keep(SeqId seq) override;
    bool seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) override;
    int32_t seq_pos_min(SeqId seq) const override;
    int32_t seq_pos_max(SeqId seq) const override;
    bool can_seq_rm(SeqId seq, int32_t p0, int32_t p1) const override;
    bool can_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) const override;
    bool can_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) const override;

    // Micro-batches hold the tokens of one sequence each (split_by_sequence).
    // split() throws cria::Error for a token in several sequences, a sequence
    // id >= n_seq_max, or positions that do not continue the sequence's state
    // one by one. place() always has room (the cells are per sequence).
    Split split(const UbatchView& batch, uint32_t n_ubatch) const override;
    bool place(const UbatchView& ubatch) override;
    void unplace() override;

    bool checkpoint_begin(SeqId seq, int32_t n_positions) override;
    bool checkpoint_commit(SeqId seq, int32_t n_accepted) override;

    // One section: u32 n_layer, r_size, s_size; i32 first, last; when the
    // sequence is not empty, per layer r_size + s_size floats.
    void save_seq(SeqId seq, std::vector<Section>& out) const override;
    std::unique_ptr<LoadedSequence> read_seq(SeqId seq, std::span<const Section> sections,
                                             const LoadLimits& limits) const override;
    void load_seq(SeqId seq, LoadedSequence& loaded) override;
    uint64_t max_saved_bytes() const override;
    size_t memory_bytes() const override;

private:
    struct Cell {
        int32_t first = -1, last = -1;  // span of positions the state summarises; -1: empty
    };
    struct Checkpoint {
        int32_t base = -1;  // first position of the verify batch; -1: none open
        int32_t length = 0;
        std::vector<float> before;     // every layer's state before the batch
        std::vector<float> positions;  // every layer's state after each position of the batch
    };
    // What removing/copying/shifting [p0, p1) means for a cell.
    enum class Overlap { None, Whole, Partial };
    Overlap overlap(const Cell& cell, int32_t p0, int32_t p1) const;
    void check_seq(SeqId seq) const;
    size_t state_floats() const { return size_t{params_.r_size} + params_.s_size; }
    float* state(uint32_t layer, SeqId seq) { return layers_[layer].data() + static_cast<size_t>(seq) * state_floats(); }
    const float* state(uint32_t layer, SeqId seq) const {
        return layers_[layer].data() + static_cast<size_t>(seq) * state_floats();
    }
    void copy_state_out(SeqId seq, float* dst) const;  // every layer's state, layer after layer
    void copy_state_in(SeqId seq, const float* src);
    void clear_cell(SeqId seq);

    RecurrentParams params_;
    std::vector<std::vector<float>> layers_;  // per layer: n_seq_max states
    std::vector<Cell> cells_;
    std::vector<Checkpoint> checkpoints_;
    std::vector<Cell> placed_before_;  // cells as they were before the last place()
};

}  // namespace cria::memory
