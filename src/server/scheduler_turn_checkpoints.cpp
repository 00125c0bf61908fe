// Turn checkpoints of the scheduler (server/state_checkpoints.h): a finished
// request leaves its slot's state in the store, and a later prompt that
// starts with its tokens (under the same LoRA scales) resumes from it in any slot.

#include <exception>

#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

void Scheduler::keep_turn_checkpoint(Slot& slot) {
    // A slot holding images is not kept: the state would not say which images its placeholders stand for.
    if (!checkpoints_ || slot.cache.empty() || !slot.cache_images.empty()) return;
    try {
        apply_slot_lora(slot, slot.lora);
        checkpoints_->put(slot.cache, backend_.snapshot_sequence(slot.id, slot.cache), slot.lora);
    } catch (const std::exception&) {
        // A checkpoint only saves work later: without it the next turn is evaluated in full.
        return;
    }
    std::lock_guard lock(mutex_);
    stats_.turn_checkpoints = checkpoints_->size();
    stats_.turn_checkpoint_bytes = checkpoints_->bytes();
}

bool Scheduler::resume_from_checkpoint(Slot& slot, const StateCheckpoints::Checkpoint& checkpoint) {
    std::vector<TokenId> tokens;
    try {
        apply_slot_lora(slot, checkpoint.lora);
        tokens = backend_.restore_snapshot(slot.id, checkpoint.state);
    } catch (const std::exception&) {
        return false;  // the backend left the sequence as it was
    }
    // Not what the store says it holds (which the store never lets happen):
    // the caller empties the slot.
    if (tokens != checkpoint.tokens) return false;
    slot.cache = std::move(tokens);
    std::lock_guard lock(mutex_);
    ++stats_.turn_checkpoint_hits_total;
    return true;
}

}  // namespace cria::server
