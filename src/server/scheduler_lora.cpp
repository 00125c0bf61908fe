// LoRA scales on the scheduler's side: one set of scales for every slot (a
// batch never mixes rows of different adapter settings), changed only while
// no slot is busy, and no cached state computed with the old scales is kept.

#include "cria/core/error.h"
#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

void Scheduler::set_lora_scales(const std::vector<float>& scales) {
    run_on_loop([&] {
        for (const auto& slot : slots_)
            if (slot->busy)
                throw Error("slot " + std::to_string(slot->id) +
                            " is busy: LoRA scales change only between requests (try again when the slots are idle)");
        backend_.set_lora_scales(scales);
        for (const auto& slot : slots_) clear_sequence(*slot);
        prompt_cache_ = PromptCache(options_.prompt_cache_bytes);
        std::lock_guard lock(mutex_);
        stats_.prompt_cache_entries = 0;
        stats_.prompt_cache_bytes = 0;
    });
}

}  // namespace cria::server
