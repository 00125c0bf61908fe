// Batch planning: one step builds one batch (every generating slot's
// [last, draft...] first, then prompt chunks in what is left), decodes it
// once and hands each slot its logit rows. Slots under different LoRA scales
// (per-request "lora") share the batch when the backend applies each
// sequence's own scales (Backend::mixes_lora_scales: each row gets its
// slot's adapters); otherwise the step decodes one batch per set of scales,
// one after the other, with the backend's scales set to each.

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

bool Scheduler::step() {
    leave_cancelled_and_late();
    if (backend_.mixes_lora_scales()) {
        for (auto& s : slots_) {
            if (!s->busy) continue;
            try {
                apply_slot_lora(*s, s->lora);
            } catch (const std::exception& e) {
                fail(*s, std::string("the LoRA scales could not be applied: ") + e.what());
            }
        }
        return step_group(nullptr);
    }
    // The distinct scales of the busy slots, in slot order (one in the usual case).
    std::vector<std::vector<float>> groups;
    for (const auto& s : slots_)
        if (s->busy && std::find(groups.begin(), groups.end(), s->lora) == groups.end()) groups.push_back(s->lora);
    bool any = false;
    for (const auto& lora : groups) any = step_group(&lora) || any;
    return any;
}

bool Scheduler::step_group(const std::vector<float>* lora) {
    if (lora != nullptr) {
        try {
            apply_lora(*lora);
        } catch (const std::exception& e) {
            for (auto& s : slots_)
                if (s->busy && s->lora == *lora) fail(*s, std::string("the LoRA scales could not be applied: ") + e.what());
            return false;
        }
    }
    StepPlan plan;
    plan.lora = lora;
    plan_generation(plan);
    plan_prompts(plan);
    if (plan.batch.empty()) return false;
    // Timed by the speculation's clock: adaptive drafting weighs these times.
    const double t_decode = spec::clock_ms(options_.speculative.clock);
    try {
        backend_.decode(plan.batch, logits_);
    } catch (const std::exception& e) {
        decode_failed(plan, e.what());
        return true;
    }
    {
        std::lock_guard lock(mutex_);
        ++stats_.decode_calls;
    }
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    const double decode_ms = spec::clock_ms(options_.speculative.clock) - t_decode;
    // Every generation entry has a logit row, and they come first.
    size_t row = 0;
    for (const StepPlan::Verify& v : plan.verifies) {
        verify(*v.slot, logits_.data() + row * n_vocab, row, decode_ms);
        row += v.n_tokens;
    }
    take_prompt_chunks(plan, row);
    return true;
}

void Scheduler::decode_failed(const StepPlan& plan, const std::string& what) {
    // The verify batches' checkpoints close first (keeping nothing), then
    // every slot in the batch starts over with an empty sequence.
    std::string error = "decode failed: " + what;
    for (const StepPlan::Verify& v : plan.verifies) {
        try {
            v.slot->speculation->discard();
        } catch (const std::exception& e) {
            error += std::string("; ") + e.what();
        }
    }
    for (Slot* s : plan.owners) {
        if (!s->busy) continue;
        std::string message = error;
        try {
            clear_sequence(*s);
        } catch (const std::exception& e) {
            message += std::string("; ") + e.what();
        }
        fail(*s, message);
    }
}

void Scheduler::leave_cancelled_and_late() {
    // Cancelled or overdue requests leave before anything is spent on them.
    for (auto& s : slots_) {
        if (!s->busy) continue;
        if (s->handle->cancelled()) finish(*s, "cancelled");
        else if (Clock::now() > s->deadline) fail(*s, "the request timed out", 504);
    }
}

void Scheduler::plan_generation(StepPlan& plan) {
    // One token per generating slot keeps every stream moving; a slot's
    // draft follows its token, in what the others leave.
    auto room = static_cast<int32_t>(options_.n_batch);
    for (auto& s : slots_) room -= s->busy && s->generating && plan.takes(*s) ? 1 : 0;
    for (auto& s : slots_) {
        if (!s->busy || !s->generating || !plan.takes(*s)) continue;
        if (!shift_if_full(*s)) continue;
        // Drafts never reach past the context or the tokens the request may still get.
        const int32_t n_allowed = std::min({room, backend_.n_ctx_per_seq() - static_cast<int32_t>(s->cache.size()) - 2,
                                            s->max_tokens - s->n_generated - 1});
        std::span<const TokenId> tokens;
        try {
            tokens = s->speculation->prepare(s->cache, s->last, n_allowed, backend_);
        } catch (const std::exception& e) {  // a drafter failed (e.g. its own cache is full), or the checkpoint
            fail(*s, std::string("drafting failed: ") + e.what());
            continue;
        }
        room -= static_cast<int32_t>(tokens.size()) - 1;
        const int32_t pos = position_of(*s, s->cache.size());
        for (size_t i = 0; i < tokens.size(); ++i) {
            plan.batch.push_back({tokens[i], pos + static_cast<int32_t>(i), s->id, true});
            plan.owners.push_back(s.get());
        }
        plan.verifies.push_back({s.get(), tokens.size()});
    }
    plan.n_generation = plan.batch.size();
}

void Scheduler::plan_prompts(StepPlan& plan) {
    // Prompt chunks share the rest of the batch, in slot order.
    const int32_t n_batch = options_.n_batch;
    for (auto& s : slots_) {
        if (!s->busy || s->generating || !plan.takes(*s)) continue;
        const auto budget =
            static_cast<size_t>(std::max<int32_t>(0, n_batch - static_cast<int32_t>(plan.batch.size())));
        if (budget == 0) break;
        if (!eval_images(*s)) continue;
        // Text up to the next image (decoded on its own at a later step); the
        // feature protocol leaves the prompt's last token to the first verify step.
        size_t end = s->request.prompt.size() - (s->prompt_features_protocol ? 1 : 0);
        for (const PromptImage& img : s->request.images)
            if (img.first >= s->n_past) {
                end = std::min(end, img.first);
                break;
            }
        const size_t left = end - s->n_past;
        const size_t take = std::min(budget, left);
        for (size_t i = 0; i < take; ++i) {
            const size_t p = s->n_past + i;
            const bool output = s->prompt_features_protocol || p + 1 == s->request.prompt.size();
            plan.batch.push_back({s->request.prompt[p], position_of(*s, p), s->id, output});
            plan.owners.push_back(s.get());
        }
    }
}

bool Scheduler::eval_images(Slot& s) {
    // Images are decoded alone, each as its own batch of embeddings (gemma3
    // attends over one both ways), when the prompt reaches them. In the
    // feature protocol their rows' streams join the prompt's features: the
    // drafters that read them are seeded from every position.
    for (const PromptImage& img : s.request.images) {
        if (img.first != s.n_past) continue;
        const size_t had = s.prompt_features.size();
        try {
            backend_.decode_image(s.id, position_of(s, s.n_past), *img.image,
                                  s.prompt_features_protocol ? &s.prompt_features : nullptr);
        } catch (const std::exception& e) {
            fail(s, std::string("the image could not be evaluated: ") + e.what());
            return false;
        }
        if (s.prompt_features_protocol) {
            const auto n_embd = static_cast<size_t>(img.image->n_embd);
            const size_t added = s.prompt_features.size() - had, n_tokens = static_cast<size_t>(img.image->n_tokens);
            if (added == 0 || added % (n_tokens * n_embd) != 0) {
                fail(s, "speculative decoding failed: the image's rows gave no target features");
                return false;
            }
            s.prompt_features_shape.n_layers = added / (n_tokens * n_embd);
            s.prompt_features_shape.n_embd = n_embd;
        }
        s.cache.insert(s.cache.end(), static_cast<size_t>(img.image->n_tokens), image_placeholder(img.image->hash));
        s.cache_images.push_back(img);
        s.n_past += static_cast<size_t>(img.image->n_tokens);
        // Only the prompt's last token is left (the first verify step's): the request starts generating.
        if (s.prompt_features_protocol && s.n_past + 1 == s.request.prompt.size()) {
            start_generation(s, nullptr, 0);
            return false;
        }
    }
    return true;
}

void Scheduler::take_prompt_chunks(const StepPlan& plan, size_t row) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    for (size_t i = plan.n_generation; i < plan.batch.size(); ++i) {
        Slot& s = *plan.owners[i];
        s.cache.push_back(plan.batch[i].token);
        ++s.n_past;
        if (!plan.batch[i].logits) continue;
        const float* logits = logits_.data() + row * n_vocab;
        ++row;
        if (s.prompt_features_protocol) {
            if (!s.busy) continue;
            // Keep this row's features; after the row before the last prompt token, drafting begins.
            try {
                const spec::FeaturesView v = backend_.features(row - 1, 1, static_cast<int32_t>(s.cache.size()) - 1);
                s.prompt_features.insert(s.prompt_features.end(), v.data, v.data + v.n_layers * v.n_embd);
                s.prompt_features_shape = v;
            } catch (const std::exception& e) {
                fail(s, std::string("speculative decoding failed: ") + e.what());
                continue;
            }
            if (s.n_past + 1 < s.request.prompt.size()) continue;
        }
        // The prompt's last token (or, in the feature protocol, the one before): the request starts generating.
        start_generation(s, logits, row);
    }
}

void Scheduler::start_generation(Slot& s, const float* logits, size_t row) {
    s.generating = true;
    s.t_prompt_done = Clock::now();
    {
        const auto n_eval = static_cast<uint64_t>(s.request.prompt.size()) - static_cast<uint64_t>(s.n_cached);
        std::lock_guard lock(mutex_);
        stats_.prompt_tokens_total += n_eval;
        stats_.cached_tokens_total += static_cast<uint64_t>(s.n_cached);
        stats_.prompt_seconds_total += ms_between(s.t_start, s.t_prompt_done) / 1000.0;
    }
    // The state after the prompt also resumes a next turn whose history
    // renders this reply with other tokens than were generated.
    keep_turn_checkpoint(s);
    if (!s.busy) return;
    if (s.prompt_features_protocol) {
        try {
            s.speculation->begin(s.id, s.cache, s.spec_request);
            s.speculation->set_input_embeddings(image_rows(s.cache_images));
            spec::FeaturesView v = s.prompt_features_shape;  // every row this request decoded
            v.data = s.prompt_features.data();
            v.n_tokens = s.prompt_features.size() / (v.n_layers * v.n_embd);
            v.pos0 = s.n_cached;
            s.speculation->set_target_features(v);
        } catch (const std::exception& e) {
            fail(s, std::string("speculative decoding failed: ") + e.what());
            return;
        }
        s.last = s.request.prompt.back();  // verified by the first step, with a draft
        return;
    }
    try {
        s.speculation->begin(s.id, s.cache, s.spec_request);
        s.speculation->set_input_embeddings(image_rows(s.cache_images));
        // The stream of the prompt's last token, for drafters that read it.
        s.speculation->set_target_features(backend_.features(row - 1, 1, static_cast<int32_t>(s.cache.size()) - 1));
    } catch (const std::exception& e) {
        fail(s, std::string("speculative decoding failed: ") + e.what());
        return;
    }
    sample_first(s, logits);
}

}  // namespace cria::server
