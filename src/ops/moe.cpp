// The mixture-of-experts ops of CpuOps: top-k routing and the indexed expert
// product (ggml_mul_mat_id). The product groups the (token, slot) pairs of a
// batch by expert, so each selected expert's matrix is streamed once per
// batch whatever the number of tokens routed to it, and runs the existing
// matmul kernels on each expert's 2-D slice: every weight type matmul
// supports works. The tiles of all active experts form one task list, so the
// threads split over (expert, rows) rather than one expert at a time.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cria/matmul/matmul.h"
#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"
#include "ops/moe_detail.h"

namespace cria::ops {

void check_moe_route(const TensorView& logits, const MoeRouteParams& p, const int32_t* ids, const TensorView& weights) {
    require_f32(logits, "moe_route", "logits");
    require_f32(weights, "moe_route", "weights");
    require(logits.ne[2] == 1 && logits.ne[3] == 1, "moe_route", "logits must be 2-D, got " + shape_string(logits));
    const int64_t n_expert = logits.ne[0], n_tokens = logits.ne[1];
    require(p.n_used >= 1 && p.n_used <= n_expert, "moe_route",
            "n_used " + std::to_string(p.n_used) + " must be in [1, " + std::to_string(n_expert) + "]");
    if (p.group_count > 1) {
        require(n_expert % p.group_count == 0 && n_expert / p.group_count >= 2, "moe_route",
                std::to_string(p.group_count) + " expert groups do not split " + std::to_string(n_expert) +
                    " experts into groups of at least 2");
        require(p.group_used >= 1 && p.group_used <= p.group_count, "moe_route",
                "groups used " + std::to_string(p.group_used) + " must be in [1, " + std::to_string(p.group_count) + "]");
    }
    require(weights.ne[0] == p.n_used && weights.ne[1] == n_tokens && weights.ne[2] == 1 && weights.ne[3] == 1,
            "moe_route", "weights " + shape_string(weights) + " must be [n_used, n_tokens]");
    require(ids != nullptr || n_tokens == 0, "moe_route", "ids is null");
}

void check_matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                     const TensorView& out) {
    require(w.data != nullptr, "matmul_id", "w has no data");
    require(w.weight_packing == matmul::Packing::None, "matmul_id", "packed expert matrices are not supported yet");
    require(w.ne[3] == 1, "matmul_id", "w must be 3-D, got " + shape_string(w));
    require(matmul::supports_weight_type(w.type), "matmul_id", "unsupported weight type " + shape_string(w));
    require_f32(x, "matmul_id", "x");
    require_f32(out, "matmul_id", "out");
    require(x.ne[3] == 1 && out.ne[3] == 1, "matmul_id", "x and out must be 3-D");
    require(n_used >= 1, "matmul_id", "n_used must be positive");
    require(x.ne[0] == w.ne[0], "matmul_id", "x " + shape_string(x) + " does not match w " + shape_string(w));
    require(x.ne[1] == 1 || x.ne[1] == n_used, "matmul_id", "x must have 1 or n_used vectors per token");
    require(out.ne[0] == w.ne[1] && out.ne[1] == n_used && out.ne[2] == x.ne[2], "matmul_id",
            "out " + shape_string(out) + " must be [" + std::to_string(w.ne[1]) + ", " + std::to_string(n_used) + ", " +
                std::to_string(x.ne[2]) + "]");
    const int64_t n_expert = w.ne[2];
    for (int64_t i = 0; i < n_used * x.ne[2]; ++i)
        require(ids[i] >= 0 && ids[i] < n_expert, "matmul_id",
                "expert id " + std::to_string(ids[i]) + " is outside [0, " + std::to_string(n_expert) + ")");
}

void CpuOps::moe_route(const TensorView& logits, const MoeRouteParams& p, int32_t* ids, const TensorView& weights) {
    check_moe_route(logits, p, ids, weights);
    const int64_t n_expert = logits.ne[0], n_tokens = logits.ne[1], k = p.n_used;
    std::vector<float> pi(static_cast<size_t>(n_expert)), sel(pi.size());
    std::vector<int32_t> order(pi.size());
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* l = logits.row_f32(t);
        float* w = weights.row_f32(t);
        moe_detail::route_token<float>(l, n_expert, p, pi.data(), sel.data(), order.data(), ids + t * k, w);
    }
}

void CpuOps::matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                       const TensorView& out) {
    check_matmul_id(w, x, ids, n_used, out);
    const int64_t k = w.ne[0], rows = w.ne[1], n_expert = w.ne[2], n_tokens = x.ne[2], n_x = x.ne[1];
    const int64_t n_pairs = n_used * n_tokens;
    if (n_pairs == 0) return;

    // The (token, slot) pairs of each expert, in order: counting sort.
    std::vector<int64_t> start(static_cast<size_t>(n_expert) + 1, 0);
    for (int64_t i = 0; i < n_pairs; ++i) ++start[static_cast<size_t>(ids[i]) + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    std::vector<int64_t> pairs(static_cast<size_t>(n_pairs));
    {
        std::vector<int64_t> fill(start.begin(), start.end() - 1);
        for (int64_t i = 0; i < n_pairs; ++i) pairs[static_cast<size_t>(fill[static_cast<size_t>(ids[i])]++)] = i;
    }
    // Each expert's inputs gathered into consecutive columns, its outputs likewise.
    std::vector<float> xs(static_cast<size_t>(n_pairs * k)), ys(static_cast<size_t>(n_pairs * rows));
    for (int64_t c = 0; c < n_pairs; ++c) {
        const int64_t i = pairs[static_cast<size_t>(c)], t = i / n_used, j = i % n_used;
        std::memcpy(xs.data() + c * k, x.row(j % n_x, t), static_cast<size_t>(k) * sizeof(float));
    }

    std::vector<std::unique_ptr<matmul::MatmulPlan>> plans;
    std::vector<int64_t> q_start{0}, c_start{0};
    for (int64_t e = 0; e < n_expert; ++e) {
        const int64_t c0 = start[static_cast<size_t>(e)], cnt = start[static_cast<size_t>(e) + 1] - c0;
        if (cnt == 0) continue;
        matmul::MatmulArgs a;
        a.w = matmul::WeightMatrix{w.type, w.row(0, e), rows, k, w.nb[1], matmul::Packing::None};
        a.x = xs.data() + c0 * k;
        a.n = cnt;
        a.x_stride = k;
        a.y = ys.data() + c0 * rows;
        a.y_stride = rows;
        a.r0 = 0;
        a.r1 = rows;
        plans.push_back(std::make_unique<matmul::MatmulPlan>(a));
        q_start.push_back(q_start.back() + plans.back()->quantize_tasks());
        c_start.push_back(c_start.back() + plans.back()->compute_tasks());
    }
    const auto locate = [](const std::vector<int64_t>& starts, int64_t task) {
        return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), task) - starts.begin() - 1);
    };
    const auto quantize = [&](int64_t task, int) {
        const size_t p = locate(q_start, task);
        plans[p]->run_quantize_task(task - q_start[p]);
    };
    const auto compute = [&](int64_t task, int) {
        const size_t p = locate(c_start, task);
        plans[p]->run_compute_task(task - c_start[p]);
    };
    if (pool_.size() == 1) {
        for (int64_t i = 0; i < q_start.back(); ++i) quantize(i, 0);
        for (int64_t i = 0; i < c_start.back(); ++i) compute(i, 0);
    } else {
        pool_.parallel_for(q_start.back(), quantize);
        pool_.parallel_for(c_start.back(), compute);
    }
    for (int64_t c = 0; c < n_pairs; ++c) {
        const int64_t i = pairs[static_cast<size_t>(c)], t = i / n_used, j = i % n_used;
        std::memcpy(out.row(j, t), ys.data() + c * rows, static_cast<size_t>(rows) * sizeof(float));
    }
}

}  // namespace cria::ops
