#pragma once
// One mutating sequence operation of a memory, as a value: what a
// HybridMemory reports to its observer after it has applied one, so that
// another copy of the memory (a pipeline rank holding other layers of the
// same model, cria/runtime/pipeline.h) can apply the same operation and stay
// in step. Every copy gets the same answer, because every copy has seen the
// same operations and micro-batches.

#include <cstdint>

#include "cria/memory/memory.h"

namespace cria::memory {

struct SequenceOp {
    enum class Kind : int32_t { Clear, Remove, Copy, Keep, Add, CheckpointBegin, CheckpointCommit };
    Kind kind = Kind::Clear;
    SeqId seq = 0;
    SeqId dst = 0;       // Copy: the destination sequence
    int32_t p0 = 0;      // Remove, Copy, Add: the positions [p0, p1)
    int32_t p1 = 0;
    int32_t value = 0;   // Add: the delta; CheckpointBegin: positions; CheckpointCommit: accepted
};

// Told of every mutating sequence operation a HybridMemory was asked to do
// (including refused ones: a copy refuses them too, changing nothing).
class SequenceObserver {
public:
    virtual ~SequenceObserver() = default;
    virtual void applied(const SequenceOp& op) = 0;
};

// Applies op to `memory` and returns its answer.
bool apply_sequence_op(Memory& memory, const SequenceOp& op);

}  // namespace cria::memory
