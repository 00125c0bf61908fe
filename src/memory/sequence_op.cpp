// Replaying a recorded sequence operation on another copy of a memory.

#include "cria/memory/sequence_op.h"

#include <string>

#include "cria/core/error.h"

namespace cria::memory {

bool apply_sequence_op(Memory& memory, const SequenceOp& op) {
    switch (op.kind) {
        case SequenceOp::Kind::Clear: memory.clear(); return true;
        case SequenceOp::Kind::Remove: return memory.seq_rm(op.seq, op.p0, op.p1);
        case SequenceOp::Kind::Copy: return memory.seq_cp(op.seq, op.dst, op.p0, op.p1);
        case SequenceOp::Kind::Keep: return memory.seq_keep(op.seq);
        case SequenceOp::Kind::Add: return memory.seq_add(op.seq, op.p0, op.p1, op.value);
        case SequenceOp::Kind::CheckpointBegin: return memory.checkpoint_begin(op.seq, op.value);
        case SequenceOp::Kind::CheckpointCommit: return memory.checkpoint_commit(op.seq, op.value);
    }
    throw Error("memory: unknown sequence operation " + std::to_string(static_cast<int32_t>(op.kind)));
}

}  // namespace cria::memory
