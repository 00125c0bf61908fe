// Shape and type checks of lightning_attention: every failure a cria::Error
// naming the op and the operand.

#include "ops/lightning_checks.h"

#include <cmath>
#include <string>

#include "ops/checks.h"

namespace cria::ops {

void check_lightning_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& state,
                               const LightningParams& params, const TensorView& out) {
    const char* op = "lightning_attention";
    require_f32(q, op, "q");
    require_f32(k, op, "k");
    require_f32(v, op, "v");
    require_f32(state, op, "state");
    require_f32(out, op, "out");
    const int64_t d = q.ne[0], n_head = q.ne[1];
    require(d > 0 && n_head > 0, op, "q must have values and heads, got " + shape_string(q));
    require(q.ne[3] == 1, op, "q, k, v and out must be 3-D, got q " + shape_string(q));
    require(k.ne == q.ne && v.ne == q.ne && out.ne == q.ne, op,
            "q " + shape_string(q) + ", k " + shape_string(k) + ", v " + shape_string(v) + " and out " +
                shape_string(out) + " must have one shape");
    require(state.ne[0] == d * d && state.ne[1] == n_head && state.ne[2] == 1 && state.ne[3] == 1, op,
            "state " + shape_string(state) + " must be [" + std::to_string(d * d) + ", " + std::to_string(n_head) +
                "]");
    require(params.rates != nullptr, op, "the decay rates are missing");
    for (int64_t h = 0; h < n_head; ++h)
        require(std::isfinite(params.rates[h]) && params.rates[h] >= 0.0f, op,
                "head " + std::to_string(h) + "'s decay rate must be finite and >= 0");
}

}  // namespace cria::ops
