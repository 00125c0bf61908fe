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
        clear_sequence(slot);
    });
}

}  // namespace cria::server
