// The scheduler's thread, queue and slot assignment (see scheduler.h). The
// other concerns have their own files: batch planning (scheduler_batch.cpp),
// the speculative step per slot (scheduler_speculation.cpp), request output:
// sampling, log-probs, stop strings, text (scheduler_output.cpp) and slot
// files (scheduler_slot_files.cpp).

#include "cria/server/scheduler.h"

#include <algorithm>
#include <cmath>

#include "cria/core/error.h"
#include "cria/media/image_positions.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/grammar.h"
#include "cria/spec/params.h"
#include "server/scheduler_slot.h"

namespace cria::server {

namespace {

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

// The cached prefix a prompt may reuse: equal tokens, and every image in it
// the same image (full hash and size, not only the placeholder), never cut
// in the middle (an image's cells are reused whole or recomputed whole).
size_t reusable_prefix(const std::vector<TokenId>& cache, const std::vector<PromptImage>& cache_images,
                       const GenerationRequest& request) {
    size_t len = common_prefix(cache, request.prompt);
    for (const PromptImage& img : request.images) {
        if (img.first >= len) break;
        const auto same = std::find_if(cache_images.begin(), cache_images.end(), [&](const PromptImage& c) {
            return c.first == img.first && c.image->hash == img.image->hash && c.image->n_tokens == img.image->n_tokens;
        });
        const size_t end = img.first + static_cast<size_t>(img.image->n_tokens);
        if (same == cache_images.end() || len < end) len = std::min(len, img.first);
    }
    return len;
}

}  // namespace

TokenId image_placeholder(uint64_t hash) { return -2 - static_cast<TokenId>(hash & 0x3fffffff); }

int32_t Scheduler::position_of(const Slot& slot, size_t index) const {
    auto pos = static_cast<int64_t>(index);
    if (backend_.mrope())
        for (const PromptImage& img : slot.cache_images)
            if (img.first + static_cast<size_t>(img.image->n_tokens) <= index)
                pos -= img.image->n_tokens - media::image_position_count(*img.image, true);
    return static_cast<int32_t>(pos);
}

Scheduler::Scheduler(Backend& backend, SchedulerOptions options)
    : backend_(backend), options_(options), prompt_cache_(options.prompt_cache_bytes) {
    if (options_.n_slots <= 0) throw Error("the number of slots must be positive");
    if (options_.n_batch <= 0) options_.n_batch = 256;
    options_.n_batch = std::min(options_.n_batch, backend_.max_batch());
    if (options_.max_queue < 0) options_.max_queue = 0;
    if (options_.context_shift) {
        const std::string why = backend_.context_shift_refusal();
        if (!why.empty()) throw Error("--context-shift: this model cannot shift its context: " + why);
        if (options_.speculative.enabled())
            throw Error("--context-shift does not work with speculative decoding yet (the drafters' caches would "
                        "have to be shifted with the target's)");
    }
    vocab_index_ = grammar::VocabIndex::build(backend_.vocab());
    for (int32_t i = 0; i < options_.n_slots; ++i) {
        auto slot = std::make_unique<Slot>();
        slot->id = i;
        slots_.push_back(std::move(slot));
    }
    stats_.slots_total = options_.n_slots;
    for (const Backend::LoraAdapterInfo& a : backend_.lora_adapters()) lora_scales_.push_back(a.scale);
    applied_lora_ = lora_scales_;
    for (auto& slot : slots_) slot->lora = lora_scales_;
    // A state the cache or the checkpoints let go is dropped by the backend
    // too (a model split over ranks keeps the other ranks' parts there).
    const auto drop = [this](std::span<const uint8_t> state) { backend_.drop_sequence_state(state); };
    prompt_cache_.set_on_drop(drop);
    if (options_.turn_checkpoint_bytes > 0 && backend_.wants_turn_checkpoints())
        checkpoints_ = std::make_unique<StateCheckpoints>(options_.turn_checkpoint_bytes, drop);
    if (options_.speculative.enabled()) {
        if (options_.speculative.n_max < 0) throw Error("speculative: n_max must not be negative");
        for (auto& slot : slots_) slot->drafters = backend_.make_drafters(options_.speculative);
        for (const auto& d : slots_.front()->drafters)
            spec_types_.push_back(spec::drafter_type_name(d->name()));  // the flag spelling
    }
    for (auto& slot : slots_) {
        std::vector<spec::Drafter*> drafters;
        for (auto& d : slot->drafters) drafters.push_back(d.get());
        slot->speculation = std::make_unique<spec::SpeculativeStep>(std::move(drafters), options_.speculative.adaptive,
                                                                    backend_.n_vocab(), options_.speculative.clock);
    }
    // Drafters that read the target's hidden state have the backend capture it.
    if (!slots_.empty())
        if (const auto layers = slots_.front()->speculation->feature_layers(); !layers.empty())
            backend_.set_capture_layers(layers);
    paused_ = options_.start_paused;
    thread_ = std::thread([this] { loop(); });
}

void Scheduler::pause() {
    std::lock_guard lock(mutex_);
    paused_ = true;
}

void Scheduler::resume() {
    {
        std::lock_guard lock(mutex_);
        paused_ = false;
    }
    cv_.notify_all();
}

Scheduler::~Scheduler() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

std::shared_ptr<RequestHandle> Scheduler::submit(GenerationRequest request) {
    const int32_t n_ctx = backend_.n_ctx_per_seq();
    if (request.prompt.empty()) throw Error("the prompt is empty");
    if (static_cast<int32_t>(request.prompt.size()) >= n_ctx)
        throw Error("the prompt has " + std::to_string(request.prompt.size()) +
                    " tokens, more than the context of " + std::to_string(n_ctx) + " positions allows");
    // Image spans hold their placeholder; everything else is a vocabulary id.
    size_t next_image = 0, image_end = 0;
    for (size_t i = 0; i < request.prompt.size(); ++i) {
        const TokenId t = request.prompt[i];
        if (next_image < request.images.size() && request.images[next_image].first == i) {
            const auto& img = request.images[next_image++];
            if (!img.image || img.image->n_tokens <= 0) throw Error("an image of the prompt has no tokens");
            image_end = i + static_cast<size_t>(img.image->n_tokens);
            if (image_end > request.prompt.size()) throw Error("an image runs past the end of the prompt");
        }
        if (i < image_end) {
            if (t != image_placeholder(request.images[next_image - 1].image->hash))
                throw Error("an image's span of the prompt holds other tokens");
            continue;
        }
        if (t < 0 || t >= backend_.n_vocab()) throw Error("token id " + std::to_string(t) + " is out of range");
    }
    if (next_image != request.images.size()) throw Error("the prompt's images are not in order or overlap");
    // The first sample needs the logits of a text token.
    if (image_end == request.prompt.size() && !request.images.empty())
        throw Error("the prompt must not end with an image");
    if (request.top_logprobs > 20) throw Error("top_logprobs must be at most 20");
    check_speculative(request.speculative);
    if (!request.lora.empty()) {
        const size_t n_adapters = backend_.lora_adapters().size();
        if (request.lora.size() != n_adapters)
            throw Error("the request has " + std::to_string(request.lora.size()) + " LoRA scales; the server has " +
                        std::to_string(n_adapters) + " adapters");
        for (float scale : request.lora)
            if (!std::isfinite(scale)) throw Error("a LoRA scale is not a finite number");
    }
    Pending pending;
    pending.handle = std::make_shared<RequestHandle>();
    pending.deadline = Clock::now() + request.timeout;
    // Build the chain here, on the caller's thread, so that bad parameters
    // and grammars are reported to the client before anything is queued.
    sampling::ChainContext cc;
    cc.vocab = &backend_.vocab();
    cc.n_ctx = n_ctx;
    cc.n_ctx_train = n_ctx;
    pending.chain = std::make_unique<sampling::Chain>(sampling::build_chain(request.sampling, cc));
    if (!request.grammar.empty()) {
        sampling::GrammarOptions grammar;
        grammar.grammar = request.grammar;
        grammar.root_rule = request.grammar_options.root_rule;
        grammar.lazy = request.grammar_options.lazy;
        grammar.triggers = request.grammar_options.triggers;
        pending.chain->set_grammar(sampling::make_grammar_sampler(vocab_index_, grammar));
    }
    pending.request = std::move(request);
    auto handle = pending.handle;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw Error("the server is shutting down");
        // Requests about to take an idle slot do not count against the queue.
        const int32_t idle = options_.n_slots - stats_.slots_busy;
        if (static_cast<int32_t>(queue_.size()) >= options_.max_queue + std::max(idle, 0)) throw QueueFull();
        queue_.push_back(std::move(pending));
        ++stats_.requests_total;
        stats_.queue_size = static_cast<int32_t>(queue_.size());
    }
    cv_.notify_all();
    return handle;
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

std::vector<SlotInfo> Scheduler::slots() const {
    std::lock_guard lock(mutex_);
    return slot_snapshot_;
}

void Scheduler::clear_sequence(Slot& slot) {
    slot.cache.clear();
    slot.cache_images.clear();
    if (!backend_.seq_keep_prefix(slot.id, 0))
        throw Error("the backend could not empty the sequence of slot " + std::to_string(slot.id));
}

void Scheduler::publish_slots() {
    std::vector<SlotInfo> snap;
    int32_t busy = 0;
    for (const auto& s : slots_) {
        snap.push_back({s->id, s->busy, static_cast<int32_t>(s->cache.size()),
                        s->busy ? static_cast<int32_t>(s->request.prompt.size()) : 0, s->n_generated});
        busy += s->busy ? 1 : 0;
    }
    std::lock_guard lock(mutex_);
    slot_snapshot_ = std::move(snap);
    stats_.slots_busy = busy;
    stats_.queue_size = static_cast<int32_t>(queue_.size());
}

// ---------------------------------------------------------------- the loop

void Scheduler::loop() {
    publish_slots();
    for (;;) {
        std::deque<std::function<void()>> tasks;
        bool paused = false;
        {
            std::unique_lock lock(mutex_);
            const bool any_busy =
                std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; });
            if (!any_busy)
                cv_.wait_for(lock, std::chrono::milliseconds(100),
                             [&] { return stopping_ || (!paused_ && !queue_.empty()) || !tasks_.empty(); });
            if (stopping_) break;
            tasks.swap(tasks_);
            paused = paused_;  // no slot is busy while paused: nothing to step
        }
        for (auto& task : tasks) task();
        if (paused) continue;
        assign_waiting();
        step();
        publish_slots();
    }
    // Shutting down: tell everyone still waiting.
    for (auto& s : slots_)
        if (s->busy) fail(*s, "the server is shutting down");
    std::deque<Pending> rest;
    std::deque<std::function<void()>> tasks;
    {
        std::lock_guard lock(mutex_);
        rest.swap(queue_);
        tasks.swap(tasks_);
    }
    for (auto& p : rest) {
        GenerationEvent e;
        e.kind = GenerationEvent::Kind::Error;
        e.error = "the server is shutting down";
        e.http_status = 503;
        p.handle->push(std::move(e));
    }
    for (auto& task : tasks) task();  // they report the shutdown themselves
}

void Scheduler::assign_waiting() {
    for (;;) {
        Pending pending;
        Slot* slot = nullptr;
        bool cancelled = false, late = false;
        {
            std::lock_guard lock(mutex_);
            if (queue_.empty()) return;
            Pending& front = queue_.front();
            if (front.handle->cancelled()) {
                cancelled = true;
                ++stats_.requests_cancelled;
            } else if (Clock::now() > front.deadline) {
                late = true;
                ++stats_.requests_failed;
            } else {
                // The idle slot with the longest cached prefix (computed with the
                // request's LoRA scales); ties go to the lowest id.
                const std::vector<float>& lora = front.request.lora.empty() ? lora_scales_ : front.request.lora;
                size_t best_len = 0;
                for (auto& s : slots_) {
                    if (s->busy) continue;
                    const size_t len = s->lora == lora ? reusable_prefix(s->cache, s->cache_images, front.request) : 0;
                    if (!slot || len > best_len) slot = s.get(), best_len = len;
                }
                if (!slot) return;
            }
            pending = std::move(front);
            queue_.pop_front();
            stats_.queue_size = static_cast<int32_t>(queue_.size());
        }
        if (cancelled) {
            GenerationEvent e;
            e.kind = GenerationEvent::Kind::Done;
            e.finish_reason = "cancelled";
            e.n_prompt = static_cast<int32_t>(pending.request.prompt.size());
            pending.handle->push(std::move(e));
        } else if (late) {
            GenerationEvent e;
            e.kind = GenerationEvent::Kind::Error;
            e.error = "the request timed out while waiting for a free slot";
            e.http_status = 504;  // the one timeout status, wherever the deadline passes
            pending.handle->push(std::move(e));
        } else {
            start(*slot, std::move(pending));
        }
    }
}

void Scheduler::start(Slot& slot, Pending pending) {
    slot.busy = true;
    slot.request = std::move(pending.request);
    slot.handle = std::move(pending.handle);
    slot.deadline = pending.deadline;
    slot.chain = std::move(*pending.chain);
    slot.detok = std::make_unique<vocab::StreamingDetokenizer>(backend_.vocab(), slot.request.render_special);
    slot.t_start = Clock::now();
    slot.generating = false;
    slot.text.clear();
    slot.sent = 0;
    slot.held_logprobs.clear();
    slot.n_generated = 0;
    slot.shifted_keep = -1;
    const SpeculativeRequest& sr = slot.request.speculative;
    // Images in the prompt are gaps in the history the drafters read
    // (spec/text_positions.h), one entry per position; under M-RoPE an image
    // takes fewer positions than entries, so such a request decodes plainly.
    const bool spec_off = slot.drafters.empty() || sr.n_max == 0 || sr.type == "none" ||
                          (backend_.mrope() && !slot.request.images.empty());
    spec::StepRequest& req = slot.spec_request;
    req.n_max = spec_off ? 0 : (sr.n_max > 0 ? sr.n_max : options_.speculative.n_max);
    req.n_min = sr.n_min;
    req.p_min = sr.p_min;
    req.only_drafter = -1;
    if (!spec_off && !sr.type.empty()) {
        const std::string type(spec::spec_type_name(spec::parse_spec_type(sr.type)));
        req.only_drafter = static_cast<int>(std::find(spec_types_.begin(), spec_types_.end(), type) - spec_types_.begin());
    }
    req.sampling = slot.request.sampling;
    // The step begins when the prompt is in the cache; until then nothing of an earlier request counts.
    slot.speculation->metrics() = spec::Metrics{};
    slot.synced_drafted = slot.synced_accepted = slot.synced_verify_steps = 0;
    slot.synced_position_tried.clear();
    slot.synced_position_accepted.clear();
    const int32_t n_ctx = backend_.n_ctx_per_seq();
    // A context shift frees room as generation goes: only the request (and --max-tokens) limit it.
    const int32_t room = options_.context_shift ? INT32_MAX : n_ctx - static_cast<int32_t>(slot.request.prompt.size());
    slot.max_tokens = slot.request.max_tokens < 0 ? room : std::min(slot.request.max_tokens, room);
    if (options_.max_tokens_cap > 0) slot.max_tokens = std::min(slot.max_tokens, options_.max_tokens_cap);
    // Keep the longest common prefix computed with the request's LoRA scales,
    // but always evaluate at least the last prompt token: its logits are
    // needed for the first sample.
    const std::vector<float> lora = slot.request.lora.empty() ? lora_scales() : slot.request.lora;
    size_t keep = slot.lora == lora ? reusable_prefix(slot.cache, slot.cache_images, slot.request) : 0;
    if (prompt_cache_.enabled()) keep = use_prompt_cache(slot, keep, lora);
    // Whatever the slot keeps from here on (its first `keep` cells, a lender's
    // or a checkpoint's) is under `lora`; the rest is dropped below.
    slot.lora = lora;
    if (keep == slot.request.prompt.size()) --keep;  // text: the prompt never ends with an image
    // Another slot holding more of the prompt lends its cells (n > 1 choices
    // of one prompt, started once the first has evaluated it); images count
    // as reusable_prefix says (same image, whole).
    Slot* lender = nullptr;
    size_t lent = keep;
    for (auto& other : slots_) {
        if (other.get() == &slot || other->lora != lora) continue;
        const size_t len = std::min(reusable_prefix(other->cache, other->cache_images, slot.request),
                                    slot.request.prompt.size() - 1);
        if (len > lent) lender = other.get(), lent = len;
    }
    if (lender != nullptr) {
        if (backend_.seq_copy_prefix(lender->id, slot.id, position_of(*lender, lent))) {
            slot.cache.assign(slot.request.prompt.begin(), slot.request.prompt.begin() + static_cast<std::ptrdiff_t>(lent));
            slot.cache_images.clear();
            for (const PromptImage& c : lender->cache_images)
                if (c.first + static_cast<size_t>(c.image->n_tokens) <= lent) slot.cache_images.push_back(c);
            keep = lent;
        } else {
            slot.cache.clear();  // the failed copy left the sequence empty
            slot.cache_images.clear();
            keep = 0;
        }
    }
    // (A prompt with nothing to decode before its last token is begun plainly.)
    slot.prompt_features_protocol = req.n_max > 0 && !slot.speculation->feature_layers().empty() &&
                                    keep + 1 < slot.request.prompt.size();
    slot.prompt_features.clear();
    // A memory that cannot drop part of a history (a recurrent state) keeps
    // only a slot's whole cache; a turn checkpoint that covers more of the
    // prompt than that is loaded instead.
    const StateCheckpoints::Checkpoint* checkpoint =
        checkpoints_ ? checkpoints_->longest_prefix_of(slot.request.prompt, lora) : nullptr;
    const bool checkpoint_first = checkpoint && checkpoint->tokens.size() > keep;
    if (!checkpoint_first && backend_.seq_keep_prefix(slot.id, position_of(slot, keep))) {
        slot.cache.resize(keep);
        std::erase_if(slot.cache_images,
                      [&](const PromptImage& c) { return c.first + static_cast<size_t>(c.image->n_tokens) > keep; });
    } else if (checkpoint && resume_from_checkpoint(slot, *checkpoint)) {
        keep = slot.cache.size();
        slot.cache_images.clear();  // checkpoints hold text only
    } else {
        // Neither: the prompt is evaluated in full.
        keep = 0;
        try {
            clear_sequence(slot);
        } catch (const std::exception& e) {
            fail(slot, e.what());
            return;
        }
    }
    if (slot.prompt_features_protocol && keep + 1 >= slot.request.prompt.size()) slot.prompt_features_protocol = false;
    slot.n_past = keep;
    slot.n_cached = static_cast<int32_t>(keep);
    // The penalty samplers (repeat/frequency/presence, DRY) see the prompt,
    // as in cria run (runtime::generate), llama-completion and llama-server;
    // the grammar does not (it constrains only the output).
    for (TokenId t : slot.request.prompt)
        if (t >= 0) slot.chain.accept_prompt(t);  // image placeholders are no tokens
    if (slot.max_tokens <= 0) finish(slot, "length");
}

}  // namespace cria::server
