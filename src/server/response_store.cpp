// LRU store of Responses API conversations (see response_store.h).
#include "response_store.h"

namespace cria::server {

void ResponseStore::put(const std::string& id, const nlohmann::ordered_json& messages) {
    // What the conversation costs: its serialized size plus the id (the map
    // and list overhead is small against a conversation's text).
    const size_t size = messages.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).size() + id.size();
    std::lock_guard lock(mu_);
    if (auto it = index_.find(id); it != index_.end()) {
        bytes_ -= it->second->bytes;
        lru_.erase(it->second);
        index_.erase(it);
    }
    if (max_count_ == 0 || size > max_bytes_) return;
    lru_.push_front(Entry{id, messages, size});
    index_[id] = lru_.begin();
    bytes_ += size;
    evict_locked();
}

std::optional<nlohmann::ordered_json> ResponseStore::get(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->messages;
}

void ResponseStore::evict_locked() {
    while (!lru_.empty() && (lru_.size() > max_count_ || bytes_ > max_bytes_)) {
        bytes_ -= lru_.back().bytes;
        index_.erase(lru_.back().id);
        lru_.pop_back();
    }
}

size_t ResponseStore::count() const {
    std::lock_guard lock(mu_);
    return lru_.size();
}

size_t ResponseStore::bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
}

}  // namespace cria::server
