// The mixture-of-experts ops of CpuOps: top-k routing and the indexed expert
// product (ggml_mul_mat_id), which is cria_matmul's matmul_id (grouped by
// expert, activations quantised once per token, one task list over every
// active expert's rows; see cria/matmul/matmul_id.h) on the op's workspace.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cria/matmul/matmul.h"
#include "cria/matmul/matmul_id.h"
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
    require(p.group_count <= 1, "moe_route",
            "expert groups (expert_group_count = " + std::to_string(p.group_count) + ") are not supported yet");
    require(weights.ne[0] == p.n_used && weights.ne[1] == n_tokens && weights.ne[2] == 1 && weights.ne[3] == 1,
            "moe_route", "weights " + shape_string(weights) + " must be [n_used, n_tokens]");
    require(ids != nullptr || n_tokens == 0, "moe_route", "ids is null");
}

void check_matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                     const TensorView& out, bool allow_packed) {
    // Messages are built only on failure: this runs two or three times per
    // layer and token, and formatting shapes cost more than the checks.
    const auto fail = [](const std::string& what) { require(false, "matmul_id", what); };
    if (w.data == nullptr) fail("w has no data");
    if (!allow_packed && w.weight_packing != matmul::Packing::None)
        fail("packed expert matrices are read by the matmul kernels only");
    if (w.ne[3] != 1) fail("w must be 3-D, got " + shape_string(w));
    if (!matmul::supports_weight_type(w.type)) fail("unsupported weight type " + shape_string(w));
    require_f32(x, "matmul_id", "x");
    require_f32(out, "matmul_id", "out");
    if (x.ne[3] != 1 || out.ne[3] != 1) fail("x and out must be 3-D");
    if (n_used < 1) fail("n_used must be positive");
    if (x.ne[0] != w.ne[0]) fail("x " + shape_string(x) + " does not match w " + shape_string(w));
    if (x.ne[1] != 1 && x.ne[1] != n_used) fail("x must have 1 or n_used vectors per token");
    if (out.ne[0] != w.ne[1] || out.ne[1] != n_used || out.ne[2] != x.ne[2])
        fail("out " + shape_string(out) + " must be [" + std::to_string(w.ne[1]) + ", " + std::to_string(n_used) + ", " +
             std::to_string(x.ne[2]) + "]");
    const int64_t n_expert = w.ne[2];
    for (int64_t i = 0; i < n_used * x.ne[2]; ++i)
        if (ids[i] < 0 || ids[i] >= n_expert)
            fail("expert id " + std::to_string(ids[i]) + " is outside [0, " + std::to_string(n_expert) + ")");
}

void CpuOps::moe_route(const TensorView& logits, const MoeRouteParams& p, int32_t* ids, const TensorView& weights) {
    check_moe_route(logits, p, ids, weights);
    const int64_t n_expert = logits.ne[0], n_tokens = logits.ne[1], k = p.n_used;
    // Scratch kept across calls (grown, never shrunk): routing allocates nothing.
    route_scores_.resize(2 * static_cast<size_t>(n_expert));
    route_order_.resize(static_cast<size_t>(n_expert));
    float* pi = route_scores_.data();
    float* sel = pi + n_expert;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* l = logits.row_f32(t);
        float* w = weights.row_f32(t);
        moe_detail::route_token<float>(l, n_expert, p, pi, sel, route_order_.data(), ids + t * k, w);
    }
}

void CpuOps::matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                       const TensorView& out) {
    check_matmul_id(w, x, ids, n_used, out, /*allow_packed=*/true);
    require(x.nb[1] % sizeof(float) == 0 && x.nb[2] % sizeof(float) == 0 && out.nb[1] % sizeof(float) == 0 &&
                out.nb[2] % sizeof(float) == 0,
            "matmul_id", "strides of x and out must be whole floats");
    matmul::MatmulIdArgs a;
    a.w = matmul::ExpertMatrices{w.type, w.data, w.ne[2], w.ne[1], w.ne[0], w.nb[1], w.nb[2], w.weight_packing};
    a.ids = ids;
    a.n_used = n_used;
    a.n_tokens = x.ne[2];
    a.x = reinterpret_cast<const float*>(x.data);
    a.x_per_token = x.ne[1];
    a.x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
    a.x_token_stride = static_cast<int64_t>(x.nb[2] / sizeof(float));
    a.y = reinterpret_cast<float*>(out.data);
    a.y_stride = static_cast<int64_t>(out.nb[1] / sizeof(float));
    a.y_token_stride = static_cast<int64_t>(out.nb[2] / sizeof(float));
    matmul::matmul_id(a, moe_workspace_, &pool_);
}

}  // namespace cria::ops
