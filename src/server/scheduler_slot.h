#pragma once
// Private to the scheduler's files: a slot (one KV-cache sequence and the
// request it serves), a step's batch plan, and small helpers.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cria/server/scheduler.h"
#include "cria/spec/step.h"
#include "cria/vocab/streaming_detokenizer.h"

namespace cria::server {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// A request's acceptance per draft position, summed over its drafters:
// tried[i] drafts had a token at position i, accepted[i] of them were kept.
struct PositionCounts {
    std::vector<int64_t> tried, accepted;
};
PositionCounts position_counts(const spec::Metrics& metrics);

// Where the drafters of a slot find the embedding rows of the images in its
// cache (the slot's cache_images, read when asked), by position
// (spec::DraftInput::embedding_at).
spec::EmbeddingAt image_rows(const std::vector<PromptImage>& cache_images);

struct Scheduler::Slot {
    int32_t id = 0;
    bool busy = false;
    std::vector<TokenId> cache;  // tokens the backend holds for sequence `id`
    std::vector<PromptImage> cache_images;  // the images among them (placeholders in `cache`)
    // The LoRA scales `cache`'s cells were computed with (while busy: the
    // request's); cells under other scales are never reused.
    std::vector<float> lora;
    // The scales the backend applies to sequence `id` (Backend::
    // set_sequence_lora_scales, when it mixes scales in a batch); unset: none yet.
    std::optional<std::vector<float>> backend_lora;

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
    // The n_keep of this request's last context shift; -1: none.
    int32_t shifted_keep = -1;
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
    std::vector<int64_t> synced_position_tried, synced_position_accepted;
    // Drafters that read the target's features get every prompt row, as in
    // `cria run` (spec/speculative.cpp, llama.cpp's protocol): the prompt but
    // its last token is decoded with each row's features kept here, and the
    // first step verifies the last prompt token with a draft.
    bool prompt_features_protocol = false;
    std::vector<float> prompt_features;        // rows of positions n_cached .. prompt.size() - 2
    spec::FeaturesView prompt_features_shape;  // their layers and width (data unused)
};

// One decode: every generating slot's [last, draft...] first, then prompt chunks.
struct Scheduler::StepPlan {
    struct Verify {
        Slot* slot;
        size_t n_tokens;  // [last, draft...]
    };
    // The LoRA scales of every slot in the batch; null: the slots' own, mixed
    // (Backend::mixes_lora_scales).
    const std::vector<float>* lora = nullptr;
    bool takes(const Slot& s) const { return lora == nullptr || s.lora == *lora; }
    std::vector<BatchToken> batch;
    std::vector<Slot*> owners;  // slot of each batch entry
    std::vector<Verify> verifies;
    size_t n_generation = 0;    // batch entries of generating slots (they come first)
};

}  // namespace cria::server
