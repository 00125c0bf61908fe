// LoRA scales on the scheduler's side: the server's scales, used by every
// request that names none. A slot's cells are keyed by the scales they were
// computed with (Slot::lora, and the prompt cache's and turn checkpoints'
// entries), and a step decodes each set of scales in a batch of its own
// (scheduler_batch.cpp), so new server scales drop nothing and wait for no
// slot: running requests keep theirs. A backend that applies each sequence's
// own scales (Backend::mixes_lora_scales) gets each slot's before a step,
// and the step decodes every slot in one batch.

#include <cmath>

#include "cria/core/error.h"
#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

void Scheduler::set_lora_scales(const std::vector<float>& scales) {
    const size_t n_adapters = backend_.lora_adapters().size();
    if (scales.size() != n_adapters)
        throw Error("expected " + std::to_string(n_adapters) + " LoRA scales, got " + std::to_string(scales.size()));
    for (float scale : scales)
        if (!std::isfinite(scale)) throw Error("a LoRA scale is not a finite number");
    std::lock_guard lock(mutex_);
    lora_scales_ = scales;
}

void Scheduler::apply_lora(const std::vector<float>& lora) {
    if (lora == applied_lora_) return;
    backend_.set_lora_scales(lora);
    applied_lora_ = lora;
}

void Scheduler::apply_slot_lora(Slot& slot, const std::vector<float>& lora) {
    if (!backend_.mixes_lora_scales()) {
        apply_lora(lora);
        return;
    }
    if (slot.backend_lora == lora) return;
    slot.backend_lora.reset();  // unknown if the backend refuses
    backend_.set_sequence_lora_scales(slot.id, lora);
    slot.backend_lora = lora;
}

std::vector<float> Scheduler::lora_scales() const {
    std::lock_guard lock(mutex_);
    return lora_scales_;
}

}  // namespace cria::server
