// Slot storage: saving, restoring and erasing a slot's cached sequence,
// run on the scheduler's thread between steps.

#include <future>

#include "cria/core/error.h"
#include "cria/server/scheduler.h"
#include "server/scheduler_slot.h"

namespace cria::server {

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
        // An M-RoPE image's tokens share positions (the cache orders them
        // apart), which the sequence file does not record yet.
        if (backend_.mrope() && !slot.cache_images.empty())
            throw Error("slot " + std::to_string(id) + " holds an image of an M-RoPE text model, which a slot file "
                        "cannot record yet");
        // The file records the scales of the cells (LoraSet::identity).
        apply_slot_lora(slot, slot.lora);
        // The images among the tokens go into the file with their hashes.
        std::vector<runtime::SavedMedia> media;
        for (const PromptImage& img : slot.cache_images)
            media.push_back({static_cast<uint32_t>(img.first), static_cast<uint32_t>(img.image->n_tokens),
                             static_cast<int32_t>(img.first), static_cast<uint32_t>(img.image->n_tokens), img.image->hash});
        n = backend_.save_sequence_with_media(id, slot.cache, path, media);
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
        // Restored as computed with the server's LoRA scales: the backend
        // refuses a file saved under others (say, a request's own).
        const std::vector<float> lora = lora_scales();
        apply_slot_lora(slot, lora);
        std::vector<runtime::SavedMedia> media;
        std::vector<TokenId> tokens = backend_.restore_sequence_with_media(id, path, media);
        // The cells of each image are known by its hash and size only: a
        // prompt with the same image reuses them, any other recomputes them.
        std::vector<PromptImage> images;
        for (const runtime::SavedMedia& m : media) {
            if (m.pos != static_cast<int32_t>(m.first) || m.n_positions != m.n_tokens) {
                clear_sequence(slot);
                throw Error("the slot file places an image where this server would not");
            }
            auto record = std::make_shared<media::ImageChunk>();
            record->n_tokens = m.n_tokens;
            record->nx = m.n_tokens;
            record->ny = 1;
            record->hash = m.hash;
            for (uint32_t i = 0; i < m.n_tokens; ++i) tokens[m.first + i] = image_placeholder(m.hash);
            images.push_back({m.first, std::move(record)});
        }
        slot.cache = std::move(tokens);
        slot.cache_images = std::move(images);
        slot.lora = lora;
        n = slot.cache.size();
    });
    return n;
}

void Scheduler::erase_slot(int32_t id) {
    if (id < 0 || id >= options_.n_slots) throw Error("slot id " + std::to_string(id) + " does not exist");
    run_on_loop([&] {
        Slot& slot = *slots_[static_cast<size_t>(id)];
        if (slot.busy) throw Error("slot " + std::to_string(id) + " is busy");
        clear_sequence(slot);
    });
}

}  // namespace cria::server
