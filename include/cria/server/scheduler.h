#pragma once
// The scheduler: N slots share one model with continuous batching.
//
// One thread owns the backend. Each step it builds a single batch holding
// the next token of every generating slot plus a chunk of the prompt of
// slots still prefilling (long prompts are split over several steps so they
// never stall the others), decodes it once, and samples for every slot that
// got a logit row. A new request goes to the idle slot whose cached tokens
// share the longest prefix with its prompt; that prefix is kept and only the
// rest is evaluated. Requests wait in a bounded queue when all slots are
// busy. Results flow back through a RequestHandle, which the HTTP side can
// cancel (client gone) at any time; the slot is then freed on the next step.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cria/grammar/sampler.h"
#include "cria/media/image_chunk.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/params.h"
#include "cria/server/backend.h"
#include "cria/server/prompt_cache.h"
#include "cria/server/state_checkpoints.h"
#include "cria/spec/params.h"
#include "cria/spec/step.h"

namespace cria::server {

// Per-request speculative decoding (llama-server's "speculative.n_max",
// "speculative.n_min", "speculative.p_min", and cria's "speculative" object).
struct SpeculativeRequest {
    bool given = false;    // the request set any of them
    std::string type;      // "": every drafter of the server; "none": off; else one of the server's types
    int32_t n_max = -1;    // most tokens drafted per step (-1: the server's; 0: off)
    int32_t n_min = -1;    // shorter drafts are not verified (-1: each drafter's own)
    float p_min = -1.0f;   // drafters' minimum draft probability (< 0: the server's --spec-draft-p-min)
};

// An image inside a prompt: prompt[first, first + image->n_tokens) hold
// image_placeholder(image->hash) and stand for the image's embeddings,
// which Backend::decode_image evaluates at those positions.
struct PromptImage {
    size_t first = 0;
    std::shared_ptr<const media::ImageChunk> image;
};

// The (negative, so never a vocabulary id) token that fills an image's
// span of a prompt: prefixes holding different images differ there, and
// the scheduler also compares the full hashes before reusing cached cells.
TokenId image_placeholder(uint64_t hash);

struct GenerationRequest {
    std::vector<TokenId> prompt;
    std::vector<PromptImage> images;     // in prompt order, not overlapping
    sampling::SamplingParams sampling;
    std::string grammar;                 // GBNF; empty: unconstrained
    grammar::SamplerOptions grammar_options;
    int32_t max_tokens = -1;             // -1: until the context is full (with a context shift: until the end)
    // llama-server's n_keep (prompt tokens a context shift keeps, -1: all;
    // unset: the server's --keep) and n_discard (positions it drops, 0:
    // half of those after the kept ones).
    std::optional<int32_t> n_keep;
    int32_t n_discard = 0;
    std::vector<std::string> stop;       // stop strings (not included in the output)
    int32_t top_logprobs = -1;           // -1: no log-probabilities; 0..20: with that many alternatives
    bool render_special = false;         // show control tokens in the text
    std::chrono::seconds timeout{600};   // whole request, queue included
    SpeculativeRequest speculative;
    // LoRA scales of this request, one per adapter (llama-server's "lora"
    // list, unlisted adapters at 0); empty: the server's scales when the
    // request starts. Slots under different scales never share a decode.
    std::vector<float> lora;
};

struct TopLogprob {
    std::string token;
    float logprob = 0;
};

struct TokenLogprob {
    TokenId id = 0;
    std::string token;
    float logprob = 0;
    std::vector<TopLogprob> top;
};

struct GenerationEvent {
    enum class Kind { Text, Done, Error };
    Kind kind = Kind::Text;
    std::string text;                       // Text: new output (never half a UTF-8 character or stop string)
    std::vector<TokenLogprob> logprobs;     // Text: the tokens behind it
    // Done:
    std::string finish_reason;              // "stop" (EOS or stop string), "length", "cancelled"
    std::string stop_word;                  // the stop string that ended it, if any
    int32_t n_prompt = 0, n_cached = 0, n_generated = 0;
    double prompt_ms = 0, generation_ms = 0;
    int32_t n_drafted = 0, n_draft_accepted = 0;  // speculative decoding (llama-server's draft_n, draft_n_accepted)
    int32_t n_draft_steps = 0;                    // verify steps (target decodes with a draft)
    // [i]: drafts with a token at position i, and those the target accepted.
    std::vector<int64_t> draft_position_tried, draft_position_accepted;
    int32_t slot = -1;
    bool context_shifted = false;           // a context shift dropped cells during it (llama-server's "truncated")
    int32_t n_cells = 0;                    // tokens in the slot's cache when it ended (llama-server's tokens_cached)
    // Error:
    std::string error;
    int http_status = 500;
};

// The two ends of one request: the scheduler pushes events, the HTTP side
// pops them and may cancel.
class RequestHandle {
public:
    void push(GenerationEvent event);
    // Waits up to `wait` for the next event.
    std::optional<GenerationEvent> pop(std::chrono::milliseconds wait);
    // Waits up to `wait` for an event without taking it; true when one is there
    // (n > 1 choices: the first has evaluated the prompt, the others may share it).
    bool wait_for_event(std::chrono::milliseconds wait);
    void cancel() { cancelled_.store(true); }
    // Cancelled, or the watched client has gone (which cancels it for good).
    bool cancelled();

    // Ties the request to its client: `gone` tells whether the client left
    // (e.g. its connection closed). The scheduler asks between steps, so a
    // departed client frees its slot at the next step even when nothing is
    // being written to it. unwatch_client() waits for a call in progress, so
    // `gone` may use what lives only until then (the connection's socket).
    void watch_client(std::function<bool()> gone);
    void unwatch_client();

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<GenerationEvent> events_;
    std::atomic<bool> cancelled_{false};
    std::mutex watch_mutex_;
    std::function<bool()> client_gone_;
};

struct SchedulerOptions {
    int32_t n_slots = 1;
    int32_t max_queue = 64;       // waiting requests beyond the slots; more are refused
    int32_t n_batch = 256;        // tokens per decode step (prefill chunks fill what generation leaves)
    int32_t max_tokens_cap = -1;  // server-wide cap on generated tokens (-1: context size)
    // llama-server's --context-shift: a generating slot whose context is full
    // keeps its first n_keep positions (runtime/context_shift.h), drops half
    // of the rest and goes on; off: the request ends with "length". The
    // scheduler refuses (cria::Error) a backend that cannot shift, and
    // speculative decoding with it.
    bool context_shift = false;
    // Speculative decoding: when enabled(), every slot gets its own drafters
    // (Backend::make_drafters) and each step verifies a slot's draft in the
    // same batch as everything else, with spec::SpeculativeStep (rejection
    // sampling when the request samples at temperature > 0 and the draft has
    // probabilities, i.e. the draft model; sample and compare otherwise: at
    // temperature 0 the output is the one plain decoding gives). n_max caps
    // the drafts; draft.n_min and draft.p_min are the defaults requests may
    // override.
    spec::SpecParams speculative;
    // The prompt cache (llama-server's --cache-ram): state bytes of prompts
    // that slots let go, kept for any slot (0: off). See prompt_cache.h.
    uint64_t prompt_cache_bytes = 0;
    // Turn checkpoints (server/state_checkpoints.h), kept only when the
    // backend asks for them (a recurrent or hybrid model): at most this many
    // bytes of saved states; 0 keeps none.
    size_t turn_checkpoint_bytes = size_t{256} << 20;
    // The loop takes no queued request until resume() (slot tasks still
    // run). For tests whose requests must start in the same step: requests
    // submitted one by one to a running loop start in whichever steps the
    // thread timing gives them, and so do their batches.
    bool start_paused = false;
};

struct SlotInfo {
    int32_t id = 0;
    bool busy = false;
    int32_t n_cached = 0;     // tokens held in the slot's sequence
    int32_t n_prompt = 0;
    int32_t n_generated = 0;
};

struct SchedulerStats {
    uint64_t requests_total = 0, requests_success = 0, requests_cancelled = 0, requests_failed = 0;
    uint64_t prompt_tokens_total = 0, generated_tokens_total = 0, cached_tokens_total = 0;
    double prompt_seconds_total = 0, generation_seconds_total = 0;
    uint64_t decode_calls = 0;
    uint64_t context_shifts_total = 0;  // generating slots shifted (--context-shift)
    uint64_t spec_drafted_total = 0, spec_accepted_total = 0, spec_verify_steps = 0;
    // Turn checkpoints: how many are kept, their bytes, and the prompts that resumed from one.
    uint64_t turn_checkpoints = 0, turn_checkpoint_bytes = 0, turn_checkpoint_hits_total = 0;
    // [i]: draft tokens at draft position i over all requests, and those accepted.
    std::vector<uint64_t> spec_position_drafted, spec_position_accepted;
    int32_t queue_size = 0, slots_busy = 0, slots_total = 0;
    // The prompt cache: entries and bytes held, requests that loaded an entry, tokens those loads saved.
    uint64_t prompt_cache_entries = 0, prompt_cache_bytes = 0, prompt_cache_hits = 0, prompt_cache_tokens = 0;
};

// Thrown by submit() when the queue is full (HTTP 503).
class QueueFull : public std::runtime_error {
public:
    QueueFull() : std::runtime_error("the server is busy: request queue is full") {}
};

class Scheduler {
public:
    Scheduler(Backend& backend, SchedulerOptions options);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Validates (throws cria::Error for an empty or too long prompt, a bad
    // grammar, bad sampling parameters) and queues the request.
    std::shared_ptr<RequestHandle> submit(GenerationRequest request);
    // Lets a scheduler started with SchedulerOptions::start_paused take its
    // queued requests: all that fit in idle slots start in the next step.
    void resume();
    // Stops taking queued requests again until resume() (tests: requests
    // queued while paused start together, after the earlier ones).
    void pause();

    SchedulerStats stats() const;
    std::vector<SlotInfo> slots() const;
    const SchedulerOptions& options() const { return options_; }
    Backend& backend() { return backend_; }

    // Slot persistence, run on the scheduler thread between steps. The file
    // holds the slot's KV-cache cells and tokens (Backend::save_sequence);
    // restoring loads them without evaluating anything. Throws cria::Error
    // (busy slot, bad id, a file that is unreadable, truncated, corrupt or
    // from another model: the slot is then left as it was).
    size_t save_slot(int32_t slot, const std::string& path);
    size_t restore_slot(int32_t slot, const std::string& path);
    void erase_slot(int32_t slot);

    // The server's LoRA scales (one per adapter): those of every request
    // that names none. Setting them (between steps) changes the requests
    // that start later; running ones keep the scales they started with.
    // Cached cells (slots, prompt cache, turn checkpoints) are keyed by the
    // scales they were computed with, so nothing is dropped. Throws
    // cria::Error for a wrong list.
    void set_lora_scales(const std::vector<float>& scales);
    std::vector<float> lora_scales() const;

private:
    struct Slot;
    struct Pending {
        GenerationRequest request;
        std::shared_ptr<RequestHandle> handle;
        std::unique_ptr<sampling::Chain> chain;
        std::chrono::steady_clock::time_point deadline;
    };

    struct StepPlan;

    // The loop and the queue (scheduler.cpp).
    void loop();
    void assign_waiting();
    void start(Slot& slot, Pending pending);
    void publish_slots();
    // Empties a slot's sequence in the backend and its token list; throws
    // cria::Error when the backend refuses (which no memory should).
    void clear_sequence(Slot& slot);
    // Batch planning (scheduler_batch.cpp): one decode per step.
    bool step();
    // One decode of the slots whose cells are under the scales `lora` (the
    // backend's scales are set to them first), or of every slot, each under
    // its own scales, when `lora` is null; false when none had work.
    bool step_group(const std::vector<float>* lora);
    // Sets the backend's LoRA scales to `lora` unless they are already
    // (scheduler_lora.cpp): before a decode, and before a slot's state is
    // saved or loaded (the state records the scales and a load checks them).
    void apply_lora(const std::vector<float>& lora);
    // The scales `lora` for what the backend computes, saves or loads for
    // `slot`'s sequence: its own scales when the backend mixes scales in a
    // batch (unless it has them already), else the backend's (apply_lora).
    void apply_slot_lora(Slot& slot, const std::vector<float>& lora);
    void leave_cancelled_and_late();
    void plan_generation(StepPlan& plan);
    // A generating slot whose next token would fill its context is shifted
    // (options_.context_shift; scheduler_context_shift.cpp). False when that
    // failed the slot.
    bool shift_if_full(Slot& slot);
    // After a request that shifted: its cache past the kept prefix holds
    // states computed with tokens that are gone, which no later prompt may reuse.
    void forget_shifted(Slot& slot);
    void plan_prompts(StepPlan& plan);
    // Decodes the images the slot's prompt has reached; false when it failed the slot.
    bool eval_images(Slot& slot);
    // The position of entry `index` of a slot's cache or prompt: the index,
    // less what the images before it save under M-RoPE (an image of n
    // tokens takes max(nx, ny) positions). Every image ending at or before
    // `index` must be in the slot's cache_images.
    int32_t position_of(const Slot& slot, size_t index) const;
    void take_prompt_chunks(const StepPlan& plan, size_t first_row);
    void decode_failed(const StepPlan& plan, const std::string& what);
    // Request output (scheduler_output.cpp).
    void sample_first(Slot& slot, const float* logits);
    // The prompt is in the cache (in the feature protocol, but its last
    // token): the speculative step begins and, outside the feature protocol,
    // the first token is sampled from `logits` (output row `row` - 1).
    void start_generation(Slot& slot, const float* logits, size_t row);
    // Takes a sampled token (log-probs, text, stop strings, limits); n_cached:
    // tokens in the slot's cache before it. False when the request ended.
    bool on_token(Slot& slot, TokenId token, const float* logits, int32_t n_cached);
    bool emit_text(Slot& slot, bool at_end);
    void finish(Slot& slot, const std::string& reason);
    // Ends a request with an error event: 500 unless the request caused it
    // (400: e.g. its grammar or logit biases leave no token to sample) or
    // its deadline passed (504, the one timeout status everywhere).
    void fail(Slot& slot, const std::string& message, int http_status = 500);
    // A sampler's failure: a cria::Error comes from the request's settings (400).
    void fail_sampling(Slot& slot, const std::exception& e);
    void release(Slot& slot);
    // Turn checkpoints (scheduler_turn_checkpoints.cpp). keep: saves the
    // slot's state with its tokens (a prompt evaluated, a request finished). resume: loads the
    // checkpoint into the slot; false (the slot as it was) when the backend refuses it.
    void keep_turn_checkpoint(Slot& slot);
    bool resume_from_checkpoint(Slot& slot, const StateCheckpoints::Checkpoint& checkpoint);
    // The speculative step of each slot (scheduler_speculation.cpp).
    void check_speculative(const SpeculativeRequest& request) const;
    void verify(Slot& slot, const float* rows, size_t first_row, double decode_ms);
    void sync_spec_stats(Slot& slot);
    // Slot files (scheduler_slot_files.cpp).
    void run_on_loop(const std::function<void()>& task);
    // The prompt cache (scheduler_prompt_cache.cpp): before the slot drops
    // cells past `keep` (the prefix its cache shares with the new prompt),
    // keeps its state in the cache; then loads the cached entry sharing a
    // longer prefix with the prompt under the request's LoRA scales `lora`,
    // if any. Returns the tokens now kept.
    size_t use_prompt_cache(Slot& slot, size_t keep, const std::vector<float>& lora);

    Backend& backend_;
    SchedulerOptions options_;
    std::shared_ptr<const grammar::VocabIndex> vocab_index_;
    std::vector<std::unique_ptr<Slot>> slots_;
    std::unique_ptr<StateCheckpoints> checkpoints_;  // null: the backend reuses prefixes in place
    std::vector<std::string> spec_types_;  // the drafters' types (spec_type_name spelling), in order

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Pending> queue_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    bool paused_ = false;  // SchedulerOptions::start_paused, until resume()
    SchedulerStats stats_;
    std::vector<SlotInfo> slot_snapshot_;
    std::vector<float> logits_;
    PromptCache prompt_cache_;  // used by the loop's thread only
    std::vector<float> lora_scales_;    // the server's (under mutex_)
    std::vector<float> applied_lora_;   // the backend's now (the loop's thread only)
    std::thread thread_;
};

}  // namespace cria::server
