// RequestHandle: the two ends of one request (the scheduler pushes events,
// the HTTP side pops them, cancels, or ties the request to its client).

#include "cria/server/scheduler.h"

namespace cria::server {

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

bool RequestHandle::wait_for_event(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, wait, [&] { return !events_.empty(); });
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

}  // namespace cria::server
