#include "candidate_ops.h"

#include <algorithm>
#include <limits>

#include "cria/core/error.h"

namespace cria::sampling::detail {

void keep_top(Candidates& candidates, size_t k) {
    Candidate* first = candidates.begin();
    Candidate* last = candidates.end();
    if (k < candidates.size()) {
        if (k <= 128) {
            std::partial_sort(first, first + k, last, higher_logit);
        } else {
            std::nth_element(first, first + k, last, higher_logit);
            std::sort(first, first + k, higher_logit);
        }
    } else if (!candidates.sorted()) {
        std::sort(first, last, higher_logit);
    }
    candidates.truncate(std::min(k, candidates.size()));
    candidates.set_sorted(true);
}

void sort_all(Candidates& candidates) {
    if (!candidates.sorted()) {
        std::sort(candidates.begin(), candidates.end(), higher_logit);
        candidates.set_sorted(true);
    }
}

float max_logit(const Candidates& candidates) {
    if (candidates.sorted()) {
        return candidates[0].logit;
    }
    float max_l = -std::numeric_limits<float>::infinity();
    for (const Candidate& c : candidates) {
        max_l = std::max(max_l, c.logit);
    }
    return max_l;
}

void softmax(Candidates& candidates, bool do_sort) {
    if (candidates.empty()) {
        throw Error("sampling: softmax of an empty candidate list");
    }
    if (do_sort) {
        sort_all(candidates);
    }
    const float max_l = max_logit(candidates);
    if (max_l == -std::numeric_limits<float>::infinity()) {
        throw Error("sampling: every candidate has logit -inf (all tokens are banned)");
    }
    float sum = 0.0f;
    for (Candidate& c : candidates) {
        c.p = std::exp(c.logit - max_l);
        sum += c.p;
    }
    for (Candidate& c : candidates) {
        c.p /= sum;
    }
}

size_t draw_index(const Candidates& candidates, double u) {
    double total = 0.0;
    for (const Candidate& c : candidates) {
        total += c.p;
    }
    const double target = total * u;
    double running = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
        const float p = candidates[i].p;
        if (!(p > 0.0f)) {
            continue;
        }
        running += p;
        last_positive = i;
        if (running >= target) {
            return i;
        }
    }
    return last_positive;
}

}  // namespace cria::sampling::detail
