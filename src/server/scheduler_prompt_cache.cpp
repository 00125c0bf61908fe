// The prompt cache on the scheduler's side: when a slot starts a request
// whose prompt leaves part of its cached tokens behind, that state goes to
// the cache first; and a cached entry that shares a longer prefix with the
// prompt than the slot's own cells is loaded into the slot (its cells are
// copied back: nothing is evaluated). Entries are keyed by the LoRA scales
// of their cells: the slot's go in under its own, and only an entry under
// the request's scales is loaded.

#include <cstdio>

#include "cria/core/error.h"
#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

size_t Scheduler::use_prompt_cache(Slot& slot, size_t keep, const std::vector<float>& lora) {
    // Keep what the slot is about to lose. A failure to save costs only the
    // cache entry: the request goes on as without a cache. States with images
    // are not kept (entries are text only: their tokens never match an
    // image's placeholders, so a loaded entry holds no images either).
    if (slot.cache.size() > keep && slot.cache_images.empty() && prompt_cache_.would_keep(slot.cache, 0, slot.lora)) {
        try {
            apply_slot_lora(slot, slot.lora);
            prompt_cache_.insert(slot.cache, backend_.sequence_state(slot.id, slot.cache), slot.lora);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "cria serve: prompt cache: slot %d's state was not kept: %s\n", slot.id, e.what());
        }
    }
    const PromptCache::Match match = prompt_cache_.best_match(slot.request.prompt, keep, lora);
    if (match.entry) {
        try {
            // Loading replaces the sequence, or leaves it as it was when it throws.
            apply_slot_lora(slot, lora);
            slot.cache = backend_.load_sequence_state(slot.id, match.entry->state);
            slot.cache_images.clear();
            keep = match.n_common;
            std::lock_guard lock(mutex_);
            ++stats_.prompt_cache_hits;
            stats_.prompt_cache_tokens += match.n_common;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "cria serve: prompt cache: an entry could not be loaded into slot %d: %s\n", slot.id,
                         e.what());
        }
    }
    std::lock_guard lock(mutex_);
    stats_.prompt_cache_entries = prompt_cache_.size();
    stats_.prompt_cache_bytes = prompt_cache_.bytes();
    return keep;
}

}  // namespace cria::server
