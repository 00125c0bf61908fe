// Request output: sampling a slot's first token, taking every sampled
// token (log-probs, detokenized text, stop strings, limits) and ending a
// request (Done / Error events, freeing the slot).

#include <span>
#include <string>

#include "cria/server/scheduler.h"
#include "server/logprobs.h"
#include "cria/core/error.h"
#include "server/scheduler_slot.h"
#include "server/stop_strings.h"

namespace cria::server {

void Scheduler::sample_first(Slot& slot, const float* logits) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    TokenId token = 0;
    try {
        token = slot.chain.sample(std::span<const float>(logits, n_vocab));
        slot.chain.accept(token);
    } catch (const std::exception& e) {
        fail_sampling(slot, e);
        return;
    }
    on_token(slot, token, logits, static_cast<int32_t>(slot.cache.size()));
}

bool Scheduler::on_token(Slot& slot, TokenId token, const float* logits, int32_t n_cached) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    ++slot.n_generated;
    {
        std::lock_guard lock(mutex_);
        ++stats_.generated_tokens_total;
    }
    if (slot.request.top_logprobs >= 0)
        slot.held_logprobs.push_back(token_logprob(std::span<const float>(logits, n_vocab), token,
                                                   slot.request.top_logprobs, backend_.vocab()));
    if (backend_.vocab().is_eog(token)) {
        finish(slot, "stop");
        return false;
    }
    slot.last = token;
    slot.text += slot.detok->push(token);
    if (emit_text(slot, false)) return false;  // a stop string ended it
    // With a context shift a full context is shifted before the next decode (shift_if_full).
    const bool full = !options_.context_shift && n_cached + 1 >= backend_.n_ctx_per_seq();
    if (slot.n_generated >= slot.max_tokens || full) finish(slot, "length");
    return slot.busy;
}

bool Scheduler::emit_text(Slot& slot, bool at_end) {
    const StopScan scan = scan_stop_strings(slot.text, slot.sent, slot.request.stop, at_end);
    const size_t upto = scan.upto, cut = scan.cut;
    if (upto > slot.sent || (!slot.held_logprobs.empty() && (upto > slot.sent || at_end || cut != std::string::npos))) {
        GenerationEvent e;
        e.kind = GenerationEvent::Kind::Text;
        e.text = slot.text.substr(slot.sent, upto - slot.sent);
        e.logprobs = std::move(slot.held_logprobs);
        slot.held_logprobs.clear();
        slot.sent = upto;
        if (!e.text.empty() || !e.logprobs.empty()) slot.handle->push(std::move(e));
    }
    if (cut != std::string::npos) {
        slot.text.resize(cut);
        slot.stop_word = scan.word;
        if (!at_end) finish(slot, "stop");
        return true;
    }
    return false;
}

void Scheduler::finish(Slot& slot, const std::string& reason) {
    std::string why = reason;
    if (reason != "cancelled") {
        slot.text += slot.detok->flush();
        if (slot.stop_word.empty() && emit_text(slot, true)) why = "stop";
    }
    GenerationEvent e;
    e.kind = GenerationEvent::Kind::Done;
    e.finish_reason = why;
    e.stop_word = slot.stop_word;
    e.n_prompt = static_cast<int32_t>(slot.request.prompt.size());
    e.n_cached = slot.n_cached;
    e.n_generated = slot.n_generated;
    e.n_drafted = static_cast<int32_t>(slot.speculation->metrics().tokens_drafted());
    e.n_draft_accepted = static_cast<int32_t>(slot.speculation->metrics().tokens_accepted());
    e.n_draft_steps = static_cast<int32_t>(slot.speculation->metrics().n_verify_steps);
    PositionCounts positions = position_counts(slot.speculation->metrics());
    e.draft_position_tried = std::move(positions.tried);
    e.draft_position_accepted = std::move(positions.accepted);
    const auto now = Clock::now();
    if (slot.generating) {
        e.prompt_ms = ms_between(slot.t_start, slot.t_prompt_done);
        e.generation_ms = ms_between(slot.t_prompt_done, now);
    } else {
        e.prompt_ms = ms_between(slot.t_start, now);
    }
    e.slot = slot.id;
    e.context_shifted = slot.shifted_keep >= 0;  // release() forgets it below
    e.n_cells = static_cast<int32_t>(slot.cache.size());
    {
        std::lock_guard lock(mutex_);
        if (why == "cancelled") ++stats_.requests_cancelled; else ++stats_.requests_success;
        stats_.generation_seconds_total += e.generation_ms / 1000.0;
    }
    slot.handle->push(std::move(e));
    release(slot);
    keep_turn_checkpoint(slot);
}

void Scheduler::fail_sampling(Slot& slot, const std::exception& e) {
    const bool request_caused = dynamic_cast<const Error*>(&e) != nullptr;
    fail(slot, std::string("sampling failed: ") + e.what(), request_caused ? 400 : 500);
}

void Scheduler::fail(Slot& slot, const std::string& message, int http_status) {
    GenerationEvent e;
    e.kind = GenerationEvent::Kind::Error;
    e.error = message;
    e.http_status = http_status;
    e.slot = slot.id;
    {
        std::lock_guard lock(mutex_);
        ++stats_.requests_failed;
    }
    slot.handle->push(std::move(e));
    release(slot);
}

void Scheduler::release(Slot& slot) {
    // The sampled-but-undecoded token is not in the cache; the rest stays for prefix reuse.
    forget_shifted(slot);
    slot.busy = false;
    slot.generating = false;
    slot.speculation->end();
    slot.handle.reset();
    slot.detok.reset();
    slot.chain = sampling::Chain();
    slot.stop_word.clear();
    slot.request = GenerationRequest();
}

}  // namespace cria::server
