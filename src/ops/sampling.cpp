// argmax and top-k over one row of logits. Single-threaded: a vocabulary row
// (~100k values) takes tens of microseconds, less than a dispatch would gain.

#include <algorithm>
#include <cmath>

#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"

namespace cria::ops {
namespace {

void check_row(const TensorView& row, const char* op) {
    require_f32(row, op, "row");
    require(row.n_rows() == 1 && row.ne[0] > 0, op, "one non-empty row expected, got " + shape_string(row));
}

// Orders (index, value) by value descending, then index ascending; NaN last.
bool ranks_before(const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
    const bool a_nan = std::isnan(a.second), b_nan = std::isnan(b.second);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.second != b.second) return a.second > b.second;
    return a.first < b.first;
}

}  // namespace

int64_t CpuOps::argmax(const TensorView& row) {
    check_row(row, "argmax");
    const float* x = reinterpret_cast<const float*>(row.row(0));
    int64_t best = -1;
    for (int64_t i = 0; i < row.ne[0]; ++i) {
        if (std::isnan(x[i])) continue;
        if (best < 0 || x[i] > x[best]) best = i;
    }
    return best < 0 ? 0 : best;
}

std::vector<std::pair<int32_t, float>> CpuOps::top_k(const TensorView& row, int64_t k) {
    check_row(row, "top_k");
    require(row.ne[0] <= INT32_MAX, "top_k", "row too long");
    require(k >= 0, "top_k", "k must not be negative");
    const float* x = reinterpret_cast<const float*>(row.row(0));
    const int64_t n = row.ne[0];
    k = std::min(k, n);
    std::vector<std::pair<int32_t, float>> best;
    best.reserve(static_cast<size_t>(k) + 1);
    // A min-heap of the k best so far: one pass, O(n log k).
    auto worse_first = [](const auto& a, const auto& b) { return ranks_before(a, b); };
    for (int64_t i = 0; i < n && k > 0; ++i) {
        const std::pair<int32_t, float> item{static_cast<int32_t>(i), x[i]};
        if (static_cast<int64_t>(best.size()) < k) {
            best.push_back(item);
            std::push_heap(best.begin(), best.end(), worse_first);
        } else if (ranks_before(item, best.front())) {
            std::pop_heap(best.begin(), best.end(), worse_first);
            best.back() = item;
            std::push_heap(best.begin(), best.end(), worse_first);
        }
    }
    std::sort(best.begin(), best.end(), ranks_before);
    return best;
}

}  // namespace cria::ops
