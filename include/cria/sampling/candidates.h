#pragma once
// The candidate list a sampler works on: one entry per token of a logit row.
//
// Mirrors llama.cpp's llama_token_data_array: samplers reorder, shrink or
// rescore the list; `sorted` says the entries are in descending logit order;
// `selected` is the index a selecting sampler (dist, greedy, mirostat) chose.
// The storage is reused between calls, so steady-state sampling allocates
// nothing once the vector has grown to the vocabulary size.

#include <cstddef>
#include <span>
#include <vector>

#include "cria/vocab/vocab.h"

namespace cria::sampling {

using vocab::TokenId;

struct Candidate {
    TokenId id;
    float logit;
    float p;  // probability, valid only after a sampler computed it
};

class Candidates {
public:
    // One candidate per logit, ids 0..n-1, unsorted, nothing selected.
    // A NaN logit becomes -inf so that it can never be selected (llama.cpp
    // would propagate the NaN into every probability).
    void fill(std::span<const float> logits);
    // Exactly these candidates (tests, speculative decoding, ...). NaN -> -inf too.
    void assign(std::span<const Candidate> candidates);

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Candidate* data() { return storage_.data() + offset_; }
    const Candidate* data() const { return storage_.data() + offset_; }
    Candidate* begin() { return data(); }
    Candidate* end() { return data() + size_; }
    const Candidate* begin() const { return data(); }
    const Candidate* end() const { return data() + size_; }
    Candidate& operator[](size_t i) { return data()[i]; }
    const Candidate& operator[](size_t i) const { return data()[i]; }
    std::span<Candidate> view() { return {data(), size_}; }
    std::span<const Candidate> view() const { return {data(), size_}; }

    bool sorted() const { return sorted_; }
    void set_sorted(bool sorted) { sorted_ = sorted; }

    // Keeps the first n candidates (n <= size()).
    void truncate(size_t n);
    // Drops the first n candidates (XTC removes the most likely ones).
    void drop_front(size_t n);

    // Index into the current view, -1 when no sampler selected yet.
    std::ptrdiff_t selected() const { return selected_; }
    void select(std::ptrdiff_t index) { selected_ = index; }
    // The selected token; throws cria::Error when nothing valid is selected.
    TokenId selected_token() const;

private:
    std::vector<Candidate> storage_;
    size_t offset_ = 0;
    size_t size_ = 0;
    bool sorted_ = false;
    std::ptrdiff_t selected_ = -1;
};

}  // namespace cria::sampling
