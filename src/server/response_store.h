#pragma once
// Conversations of the Responses API kept in server memory, so that a request
// naming `previous_response_id` continues where that response ended. Bounded
// by a count and by bytes: the least recently used conversation goes first,
// as an unbounded store would let any client grow the server without limit.
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace cria::server {

class ResponseStore {
public:
    ResponseStore(size_t max_count, size_t max_bytes) : max_count_(max_count), max_bytes_(max_bytes) {}

    // Keeps `messages` (the chat messages of the whole conversation, reply
    // included) under `id`, evicting the least recently used until both
    // bounds hold. A conversation larger than max_bytes alone is not kept.
    void put(const std::string& id, const nlohmann::ordered_json& messages);
    // The conversation stored under `id` (now the most recently used), or none.
    std::optional<nlohmann::ordered_json> get(const std::string& id);

    size_t count() const;
    size_t bytes() const;

private:
    struct Entry {
        std::string id;
        nlohmann::ordered_json messages;
        size_t bytes = 0;
    };
    void evict_locked();
    size_t max_count_, max_bytes_;
    mutable std::mutex mu_;
    std::list<Entry> lru_;  // front: most recently used
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    size_t bytes_ = 0;
};

}  // namespace cria::server
