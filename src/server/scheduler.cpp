#include "cria/server/scheduler.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <numeric>

#include "cria/core/error.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/grammar.h"
#include "cria/spec/params.h"
#include "cria/vocab/streaming_detokenizer.h"

namespace cria::server {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- RequestHandle

void RequestHandle::push(GenerationEvent event) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
    }
    cv_.notify_all();
}

std::optional<GenerationEvent> RequestHandle::pop(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, wait, [&] { return !events_.empty(); })) return std::nullopt;
    GenerationEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
}

bool RequestHandle::cancelled() {
    if (cancelled_.load()) return true;
    std::lock_guard lock(watch_mutex_);
    if (client_gone_ && client_gone_()) {
        cancelled_.store(true);
        client_gone_ = nullptr;
    }
    return cancelled_.load();
}

void RequestHandle::watch_client(std::function<bool()> gone) {
    std::lock_guard lock(watch_mutex_);
    client_gone_ = std::move(gone);
}

void RequestHandle::unwatch_client() {
    std::lock_guard lock(watch_mutex_);
    client_gone_ = nullptr;
}

// ---------------------------------------------------------------- Slot

struct Scheduler::Slot {
    int32_t id = 0;
    bool busy = false;
    std::vector<TokenId> cache;  // tokens the backend holds for sequence `id`

    // The request being served.
    GenerationRequest request;
    std::shared_ptr<RequestHandle> handle;
    Clock::time_point deadline, t_start, t_prompt_done;
    sampling::Chain chain;
    std::unique_ptr<vocab::StreamingDetokenizer> detok;
    size_t n_past = 0;              // prompt tokens already in `cache`
    bool generating = false;        // prompt done; `last` waits to be decoded
    TokenId last = 0;
    int32_t n_cached = 0, n_generated = 0, max_tokens = 0;
    std::string text;               // generated text so far
    size_t sent = 0;                // bytes of `text` already sent
    std::vector<TokenLogprob> held_logprobs;
    std::string stop_word;

    // Speculative decoding: the slot's own drafters (built once) and the
    // speculative step every generation step of the slot goes through (a
    // plain decode when nothing is drafted), with this request's settings.
    // Adaptive drafting sees the whole batch's decode time: a step's cost
    // includes the other slots' tokens, which is what this slot's tokens/s
    // depends on.
    std::vector<std::unique_ptr<spec::Drafter>> drafters;
    std::unique_ptr<spec::SpeculativeStep> speculation;
    spec::StepRequest spec_request;
    // The step's metrics already added to the server's counters.
    int64_t synced_drafted = 0, synced_accepted = 0, synced_verify_steps = 0;
};

namespace {

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

// ---------------------------------------------------------------- Scheduler

Scheduler::Scheduler(Backend& backend, SchedulerOptions options) : backend_(backend), options_(options) {
    if (options_.n_slots <= 0) throw Error("the number of slots must be positive");
    if (options_.n_batch <= 0) options_.n_batch = 256;
    options_.n_batch = std::min(options_.n_batch, backend_.max_batch());
    if (options_.max_queue < 0) options_.max_queue = 0;
    vocab_index_ = grammar::VocabIndex::build(backend_.vocab());
    for (int32_t i = 0; i < options_.n_slots; ++i) {
        auto slot = std::make_unique<Slot>();
        slot->id = i;
        slots_.push_back(std::move(slot));
    }
    stats_.slots_total = options_.n_slots;
    if (options_.speculative.enabled()) {
        if (options_.speculative.n_max < 0) throw Error("speculative: n_max must not be negative");
        for (auto& slot : slots_) slot->drafters = backend_.make_drafters(options_.speculative);
        for (const auto& d : slots_.front()->drafters) {
            std::string type(d->name());
            std::replace(type.begin(), type.end(), '_', '-');  // the flag spelling
            spec_types_.push_back(type);
            spec_has_model_ = spec_has_model_ || d->runs_model();
        }
    }
    for (auto& slot : slots_) {
        std::vector<spec::Drafter*> drafters;
        for (auto& d : slot->drafters) drafters.push_back(d.get());
        slot->speculation = std::make_unique<spec::SpeculativeStep>(std::move(drafters), options_.speculative.adaptive,
                                                                    backend_.n_vocab());
    }
    thread_ = std::thread([this] { loop(); });
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
    for (TokenId t : request.prompt)
        if (t < 0 || t >= backend_.n_vocab()) throw Error("token id " + std::to_string(t) + " is out of range");
    if (request.top_logprobs > 20) throw Error("top_logprobs must be at most 20");
    check_speculative(request.speculative);
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

void Scheduler::check_speculative(const SpeculativeRequest& r) const {
    if (!r.given || r.n_max == 0 || r.type == "none") return;  // nothing asked, or speculation off
    if (spec_types_.empty())
        throw Error("speculative decoding is off on this server: start it with --spec-type TYPE or -md DRAFT_MODEL");
    if (!r.type.empty()) {
        const std::string type(spec::spec_type_name(spec::parse_spec_type(r.type)));  // throws for an unknown name
        if (std::find(spec_types_.begin(), spec_types_.end(), type) == spec_types_.end()) {
            std::string have;
            for (const auto& t : spec_types_) have += (have.empty() ? "" : ", ") + t;
            throw Error("speculative type '" + type + "' is not enabled on this server (it drafts with " + have + ")");
        }
    }
    if (r.n_min > 0 && r.n_max > 0 && r.n_min > r.n_max) throw Error("speculative n_min must not exceed n_max");
    // p_min is a setting of the draft model's drafter, fixed when the server starts.
    if (r.p_min >= 0 && spec_has_model_ && std::abs(r.p_min - options_.speculative.draft.p_min) > 1e-6f)
        throw Error("speculative p_min cannot be changed per request: this server's draft model uses " +
                    std::to_string(options_.speculative.draft.p_min) + " (--spec-draft-p-min)");
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

std::vector<SlotInfo> Scheduler::slots() const {
    std::lock_guard lock(mutex_);
    return slot_snapshot_;
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
        {
            std::unique_lock lock(mutex_);
            const bool any_busy =
                std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; });
            if (!any_busy)
                cv_.wait_for(lock, std::chrono::milliseconds(100),
                             [&] { return stopping_ || !queue_.empty() || !tasks_.empty(); });
            if (stopping_) break;
            tasks.swap(tasks_);
        }
        for (auto& task : tasks) task();
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
                // The idle slot with the longest cached prefix; ties go to the lowest id.
                size_t best_len = 0;
                for (auto& s : slots_) {
                    if (s->busy) continue;
                    const size_t len = common_prefix(s->cache, front.request.prompt);
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
            e.http_status = 503;
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
    const SpeculativeRequest& sr = slot.request.speculative;
    const bool spec_off = slot.drafters.empty() || sr.n_max == 0 || sr.type == "none";
    spec::StepRequest& req = slot.spec_request;
    req.n_max = spec_off ? 0 : (sr.n_max > 0 ? sr.n_max : options_.speculative.n_max);
    req.n_min = sr.n_min;
    req.only_drafter = -1;
    if (!spec_off && !sr.type.empty()) {
        const std::string type(spec::spec_type_name(spec::parse_spec_type(sr.type)));
        req.only_drafter = static_cast<int>(std::find(spec_types_.begin(), spec_types_.end(), type) - spec_types_.begin());
    }
    req.sampling = slot.request.sampling;
    // The step begins when the prompt is in the cache; until then nothing of an earlier request counts.
    slot.speculation->metrics() = spec::Metrics{};
    slot.synced_drafted = slot.synced_accepted = slot.synced_verify_steps = 0;
    const int32_t n_ctx = backend_.n_ctx_per_seq();
    const int32_t room = n_ctx - static_cast<int32_t>(slot.request.prompt.size());
    slot.max_tokens = slot.request.max_tokens < 0 ? room : std::min(slot.request.max_tokens, room);
    if (options_.max_tokens_cap > 0) slot.max_tokens = std::min(slot.max_tokens, options_.max_tokens_cap);
    // Keep the longest common prefix, but always evaluate at least the last
    // prompt token: its logits are needed for the first sample.
    size_t keep = common_prefix(slot.cache, slot.request.prompt);
    if (keep == slot.request.prompt.size()) --keep;
    backend_.seq_keep_prefix(slot.id, static_cast<int32_t>(keep));
    slot.cache.resize(keep);
    slot.n_past = keep;
    slot.n_cached = static_cast<int32_t>(keep);
    // The penalty samplers (repeat/frequency/presence, DRY) see the prompt,
    // as in cria run (runtime::generate), llama-completion and llama-server;
    // the grammar does not (it constrains only the output).
    for (TokenId t : slot.request.prompt) slot.chain.accept_prompt(t);
    if (slot.max_tokens <= 0) finish(slot, "length");
}

bool Scheduler::step() {
    // Cancelled or overdue requests leave before anything is spent on them.
    for (auto& s : slots_) {
        if (!s->busy) continue;
        if (s->handle->cancelled()) finish(*s, "cancelled");
        else if (Clock::now() > s->deadline) fail(*s, "the request timed out");
    }
    std::vector<BatchToken> batch;
    std::vector<Slot*> owners;  // slot of each batch entry
    const int32_t n_batch = options_.n_batch;
    // Generation first: one token per generating slot keeps every stream
    // moving; a slot's draft follows its token, in what the others leave.
    struct Verify {
        Slot* slot;
        size_t n_tokens;  // [last, draft...]
    };
    std::vector<Verify> verifies;
    auto room = static_cast<int32_t>(n_batch);
    for (auto& s : slots_) room -= s->busy && s->generating ? 1 : 0;
    for (auto& s : slots_) {
        if (!s->busy || !s->generating) continue;
        // Drafts never reach past the context or the tokens the request may still get.
        const int32_t n_allowed = std::min({room, backend_.n_ctx_per_seq() - static_cast<int32_t>(s->cache.size()) - 2,
                                            s->max_tokens - s->n_generated - 1});
        std::span<const TokenId> tokens;
        try {
            tokens = s->speculation->prepare(s->cache, s->last, n_allowed);
        } catch (const std::exception& e) {  // a drafter failed (e.g. its own cache is full)
            fail(*s, std::string("drafting failed: ") + e.what());
            continue;
        }
        room -= static_cast<int32_t>(tokens.size()) - 1;
        const auto pos = static_cast<int32_t>(s->cache.size());
        for (size_t i = 0; i < tokens.size(); ++i) {
            batch.push_back({tokens[i], pos + static_cast<int32_t>(i), s->id, true});
            owners.push_back(s.get());
        }
        verifies.push_back({s.get(), tokens.size()});
    }
    const size_t n_generation = batch.size();
    // Prompt chunks share the rest of the batch, in slot order.
    for (auto& s : slots_) {
        if (!s->busy || s->generating) continue;
        const auto budget = static_cast<size_t>(std::max<int32_t>(0, n_batch - static_cast<int32_t>(batch.size())));
        if (budget == 0) break;
        const size_t left = s->request.prompt.size() - s->n_past;
        const size_t take = std::min(budget, left);
        for (size_t i = 0; i < take; ++i) {
            const size_t p = s->n_past + i;
            const bool last = p + 1 == s->request.prompt.size();
            batch.push_back({s->request.prompt[p], static_cast<int32_t>(p), s->id, last});
            owners.push_back(s.get());
        }
    }
    if (batch.empty()) return false;
    const auto t_decode = Clock::now();
    try {
        backend_.decode(batch, logits_);
    } catch (const std::exception& e) {
        for (Slot* s : owners) {
            if (!s->busy) continue;
            backend_.seq_keep_prefix(s->id, 0);
            s->cache.clear();
            fail(*s, std::string("decode failed: ") + e.what());
        }
        return true;
    }
    {
        std::lock_guard lock(mutex_);
        ++stats_.decode_calls;
    }
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    const double decode_ms = ms_between(t_decode, Clock::now());
    // Every generation entry has a logit row, and they come first.
    size_t row = 0;
    for (const Verify& v : verifies) {
        verify(*v.slot, logits_.data() + row * n_vocab, decode_ms);
        row += v.n_tokens;
    }
    for (size_t i = n_generation; i < batch.size(); ++i) {
        Slot& s = *owners[i];
        s.cache.push_back(batch[i].token);
        ++s.n_past;
        if (!batch[i].logits) continue;
        const float* logits = logits_.data() + row * n_vocab;
        ++row;
        s.generating = true;
        s.t_prompt_done = Clock::now();
        {
            const auto n_eval = static_cast<uint64_t>(s.request.prompt.size()) - static_cast<uint64_t>(s.n_cached);
            std::lock_guard lock(mutex_);
            stats_.prompt_tokens_total += n_eval;
            stats_.cached_tokens_total += static_cast<uint64_t>(s.n_cached);
            stats_.prompt_seconds_total += ms_between(s.t_start, s.t_prompt_done) / 1000.0;
        }
        if (!s.busy) continue;
        try {
            s.speculation->begin(s.id, s.cache, s.spec_request);
        } catch (const std::exception& e) {
            fail(s, std::string("speculative decoding failed: ") + e.what());
            continue;
        }
        sample_first(s, logits);
    }
    return true;
}

void Scheduler::verify(Slot& s, const float* rows, double decode_ms) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    const spec::LogitRow row = [&](int i) {
        return std::span<const float>(rows + static_cast<size_t>(i) * n_vocab, n_vocab);
    };
    // The i-th emitted token follows `last` and i accepted draft tokens.
    const auto n_cached = static_cast<int32_t>(s.cache.size()) + 1;
    int32_t n_emitted = 0;
    const spec::EmitToken emit = [&](TokenId token, std::span<const float> logits) {
        sync_spec_stats(s);  // the Done event and /metrics agree
        return on_token(s, token, logits.data(), n_cached + n_emitted++);
    };
    const spec::Rollback rollback = [this](int32_t seq, int32_t n_keep) { backend_.seq_keep_prefix(seq, n_keep); };
    try {
        s.speculation->finish(row, s.chain, decode_ms, s.cache, emit, rollback);
    } catch (const std::exception& e) {
        if (s.busy) fail(s, std::string("sampling failed: ") + e.what());
    }
    sync_spec_stats(s);
}

void Scheduler::sync_spec_stats(Slot& s) {
    const spec::Metrics& m = s.speculation->metrics();
    const int64_t drafted = m.tokens_drafted(), accepted = m.tokens_accepted(), steps = m.n_verify_steps;
    if (drafted == s.synced_drafted && accepted == s.synced_accepted && steps == s.synced_verify_steps) return;
    std::lock_guard lock(mutex_);
    stats_.spec_drafted_total += static_cast<uint64_t>(drafted - s.synced_drafted);
    stats_.spec_accepted_total += static_cast<uint64_t>(accepted - s.synced_accepted);
    stats_.spec_verify_steps += static_cast<uint64_t>(steps - s.synced_verify_steps);
    s.synced_drafted = drafted;
    s.synced_accepted = accepted;
    s.synced_verify_steps = steps;
}

void Scheduler::sample_first(Slot& slot, const float* logits) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    TokenId token = 0;
    try {
        token = slot.chain.sample(std::span<const float>(logits, n_vocab));
        slot.chain.accept(token);
    } catch (const std::exception& e) {
        fail(slot, std::string("sampling failed: ") + e.what());
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
    if (slot.request.top_logprobs >= 0) {
        // Log-probabilities of the model's own distribution (before sampling filters).
        float max_logit = -INFINITY;
        for (size_t i = 0; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
        double sum = 0;
        for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
        const float log_z = max_logit + static_cast<float>(std::log(sum));
        TokenLogprob lp;
        lp.id = token;
        lp.token = backend_.vocab().token_to_piece(token);
        lp.logprob = logits[token] - log_z;
        const size_t k = std::min(static_cast<size_t>(slot.request.top_logprobs), n_vocab);
        if (k > 0) {
            std::vector<TokenId> ids(n_vocab);
            std::iota(ids.begin(), ids.end(), 0);
            std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                              [&](TokenId a, TokenId b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
            for (size_t i = 0; i < k; ++i)
                lp.top.push_back({backend_.vocab().token_to_piece(ids[i]), logits[ids[i]] - log_z});
        }
        slot.held_logprobs.push_back(std::move(lp));
    }
    if (backend_.vocab().is_eog(token)) {
        finish(slot, "stop");
        return false;
    }
    slot.last = token;
    slot.text += slot.detok->push(token);
    if (emit_text(slot, false)) return false;  // a stop string ended it
    const bool full = n_cached + 1 >= backend_.n_ctx_per_seq();
    if (slot.n_generated >= slot.max_tokens || full) finish(slot, "length");
    return slot.busy;
}

bool Scheduler::emit_text(Slot& slot, bool at_end) {
    const auto& stops = slot.request.stop;
    size_t max_len = 0;
    for (const auto& s : stops) max_len = std::max(max_len, s.size());
    // A complete stop string (the earliest) ends the output where it starts.
    size_t cut = std::string::npos;
    std::string word;
    const size_t from = slot.sent >= max_len ? slot.sent - max_len + 1 : 0;
    for (const auto& s : stops) {
        if (s.empty()) continue;
        const size_t at = slot.text.find(s, from);
        if (at != std::string::npos && at < cut) cut = at, word = s;
    }
    size_t upto = slot.text.size();
    if (cut != std::string::npos) {
        upto = std::max(cut, slot.sent);
    } else if (!at_end) {
        // Hold back a tail that could still grow into a stop string.
        for (const auto& s : stops) {
            for (size_t k = std::min(s.size() - 1, slot.text.size()); k > 0; --k) {
                if (slot.text.compare(slot.text.size() - k, k, s, 0, k) == 0) {
                    upto = std::min(upto, slot.text.size() - k);
                    break;
                }
            }
        }
        upto = std::max(upto, slot.sent);
    }
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
        if (!at_end) {
            slot.stop_word = word;
            finish(slot, "stop");
        } else {
            slot.stop_word = word;
        }
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
    const auto now = Clock::now();
    if (slot.generating) {
        e.prompt_ms = ms_between(slot.t_start, slot.t_prompt_done);
        e.generation_ms = ms_between(slot.t_prompt_done, now);
    } else {
        e.prompt_ms = ms_between(slot.t_start, now);
    }
    e.slot = slot.id;
    {
        std::lock_guard lock(mutex_);
        if (why == "cancelled") ++stats_.requests_cancelled; else ++stats_.requests_success;
        stats_.generation_seconds_total += e.generation_ms / 1000.0;
    }
    slot.handle->push(std::move(e));
    release(slot);
}

void Scheduler::fail(Slot& slot, const std::string& message) {
    GenerationEvent e;
    e.kind = GenerationEvent::Kind::Error;
    e.error = message;
    e.http_status = 500;
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
    slot.busy = false;
    slot.generating = false;
    slot.speculation->end();
    slot.handle.reset();
    slot.detok.reset();
    slot.chain = sampling::Chain();
    slot.stop_word.clear();
    slot.request = GenerationRequest();
}

// ---------------------------------------------------------------- slot files

void Scheduler::run_on_loop(const std::function<void()>& task) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw Error("the server is shutting down");
        tasks_.push_back([this, task, done] {
            try {
                task();
                publish_slots();  // callers see the slot as the task left it
                done->set_value();
            } catch (...) {
                done->set_exception(std::current_exception());
            }
        });
    }
    cv_.notify_all();
    future.get();
}

size_t Scheduler::save_slot(int32_t id, const std::string& path) {
    if (id < 0 || id >= options_.n_slots) throw Error("slot id " + std::to_string(id) + " does not exist");
    size_t n = 0;
    run_on_loop([&] {
        Slot& slot = *slots_[static_cast<size_t>(id)];
        if (slot.busy) throw Error("slot " + std::to_string(id) + " is busy");
        n = backend_.save_sequence(id, slot.cache, path);
    });
    return n;
}

size_t Scheduler::restore_slot(int32_t id, const std::string& path) {
    if (id < 0 || id >= options_.n_slots) throw Error("slot id " + std::to_string(id) + " does not exist");
    size_t n = 0;
    run_on_loop([&] {
        Slot& slot = *slots_[static_cast<size_t>(id)];
        if (slot.busy) throw Error("slot " + std::to_string(id) + " is busy");
        // The backend loads the cells themselves: nothing is evaluated, and a
        // refused file leaves the slot as it was.
        slot.cache = backend_.restore_sequence(id, path);
        n = slot.cache.size();
    });
    return n;
}

void Scheduler::erase_slot(int32_t id) {
    if (id < 0 || id >= options_.n_slots) throw Error("slot id " + std::to_string(id) + " does not exist");
    run_on_loop([&] {
        Slot& slot = *slots_[static_cast<size_t>(id)];
        if (slot.busy) throw Error("slot " + std::to_string(id) + " is busy");
        backend_.seq_keep_prefix(id, 0);
        slot.cache.clear();
    });
}

}  // namespace cria::server
