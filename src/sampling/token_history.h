#pragma once
// A fixed-capacity history of accepted tokens (oldest dropped first), as the
// ring buffer llama.cpp's penalties and DRY samplers keep.

#include <cstddef>
#include <vector>

#include "cria/sampling/candidates.h"

namespace cria::sampling::detail {

class TokenHistory {
public:
    explicit TokenHistory(size_t capacity = 0) : data_(capacity) {}

    size_t capacity() const { return data_.size(); }
    size_t size() const { return size_; }
    bool full() const { return size_ == data_.size(); }

    // Appends; when full, the oldest token is overwritten. Capacity 0 keeps nothing.
    void push(TokenId token) {
        if (data_.empty()) {
            return;
        }
        data_[next_] = token;
        next_ = (next_ + 1) % data_.size();
        if (size_ < data_.size()) {
            ++size_;
        }
    }
    // The oldest token (size() > 0).
    TokenId oldest() const { return data_[(next_ + data_.size() - size_) % data_.size()]; }
    // The i-th most recent token: 0 is the last one pushed (i < size()).
    TokenId recent(size_t i) const { return data_[(next_ + data_.size() - 1 - i) % data_.size()]; }
    void clear() {
        size_ = 0;
        next_ = 0;
    }

private:
    std::vector<TokenId> data_;
    size_t size_ = 0;
    size_t next_ = 0;
};

}  // namespace cria::sampling::detail
