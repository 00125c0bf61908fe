#pragma once
// Operations shared by the samplers: ordering, softmax, drawing an index.

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "cria/sampling/candidates.h"
#include "cria/sampling/rng.h"

namespace cria::sampling::detail {

// Descending logit; equal logits by ascending id, so that every ordering is
// total and results never depend on the sorting algorithm. A function object
// (not a function pointer) so that the sorts inline the comparison.
struct HigherLogit {
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    }
};
inline constexpr HigherLogit higher_logit{};

// Sorts the k best candidates to the front and keeps only them (k <= size).
// Small k uses a heap-based partial sort (one cheap comparison per rejected
// candidate), larger k nth_element + sort of the prefix.
void keep_top(Candidates& candidates, size_t k);

// Sorts all candidates by descending logit (no-op when already sorted).
void sort_all(Candidates& candidates);

float max_logit(const Candidates& candidates);

// p = softmax(logit), computed in float as llama.cpp does. do_sort sorts first.
// Throws cria::Error when every logit is -inf (nothing can be chosen).
void softmax(Candidates& candidates, bool do_sort);

// The first index whose running sum of p reaches u * sum(p), skipping
// zero-probability candidates (so a banned or NaN candidate is never chosen).
// u in [0, 1). Returns the last positive candidate on rounding shortfall.
size_t draw_index(const Candidates& candidates, double u);

// Calls fn(candidate, value) for every (token, value) entry whose token is
// among the candidates. Fast path: a token t at index t (the untouched row
// order of fill()); the rest are found in one pass over the candidates.
// `pending` is scratch space, kept by the caller to avoid allocations.
template <typename Entry, typename TokenOf, typename Fn>
void for_each_present(Candidates& candidates, std::span<const Entry> entries, std::vector<const Entry*>& pending,
                      TokenOf token_of, Fn fn);

}  // namespace cria::sampling::detail

#include "candidate_ops_inl.h"
