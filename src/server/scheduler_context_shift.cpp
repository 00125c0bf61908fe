// Context shift of a generating slot (llama-server's --context-shift): when
// the token waiting to be decoded would fill the slot's context, the first
// n_keep positions stay, n_discard after them are dropped and the rest move
// back (runtime/context_shift.h has the rules and what cannot shift).

#include <algorithm>
#include <string>

#include "cria/runtime/context_shift.h"
#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

bool Scheduler::shift_if_full(Slot& s) {
    if (!options_.context_shift) return true;
    const int32_t n_ctx = backend_.n_ctx_per_seq();
    const auto n_past = static_cast<int32_t>(s.cache.size());
    // llama-server's trigger: the prompt's tokens plus the one about to be decoded reach n_ctx.
    if (n_past + 1 < n_ctx) return true;
    // An image's tokens cannot be cut in two (llama-server turns the shift off with a projector).
    if (!s.cache_images.empty()) {
        fail(s, "context shift cannot be used with images in the context");
        return false;
    }
    const int32_t n_keep = runtime::server_n_keep(s.request.n_keep.value_or(0), s.request.prompt.size(),
                                                  backend_.vocab().add_bos(), n_ctx);
    const int32_t n_discard = runtime::discard_count(n_past, n_keep, s.request.n_discard);
    if (n_discard <= 0) {  // everything is kept: nothing can make room
        finish(s, "length");
        return false;
    }
    // Moving cells that other sequences share would move them for those too.
    // An idle slot's cache is only kept for reuse: it lets go of them; a
    // busy one (n > 1 choices of one prompt) cannot, as in llama-server.
    const int32_t moved = n_keep + n_discard;
    if (const uint64_t sharing = backend_.seq_sharing(s.id, moved, n_past)) {
        for (auto& o : slots_) {
            if (o.get() == &s || o->busy || !(sharing >> o->id & 1)) continue;
            const size_t keep = std::min(o->cache.size(), static_cast<size_t>(moved));
            if (backend_.seq_keep_prefix(o->id, static_cast<int32_t>(keep))) o->cache.resize(keep);
        }
        if (backend_.seq_sharing(s.id, moved, n_past) != 0) {
            fail(s, "context shift cannot be used for shared prompt");
            return false;
        }
    }
    try {
        backend_.seq_shift(s.id, n_past, n_keep, n_discard);
    } catch (const std::exception& e) {
        fail(s, std::string("context shift failed: ") + e.what());
        return false;
    }
    s.cache.erase(s.cache.begin() + n_keep, s.cache.begin() + moved);
    s.shifted_keep = n_keep;
    {
        std::lock_guard lock(mutex_);
        ++stats_.context_shifts_total;
    }
    return true;
}

void Scheduler::forget_shifted(Slot& slot) {
    if (slot.shifted_keep < 0) return;
    const size_t keep = std::min(slot.cache.size(), static_cast<size_t>(slot.shifted_keep));
    if (backend_.seq_keep_prefix(slot.id, static_cast<int32_t>(keep))) {
        slot.cache.resize(keep);
    } else {
        backend_.seq_keep_prefix(slot.id, 0);  // a whole sequence always goes
        slot.cache.clear();
    }
    slot.shifted_keep = -1;
}

}  // namespace cria::server
