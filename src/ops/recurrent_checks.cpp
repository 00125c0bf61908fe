// Shape and type checks of gated_delta_net: every failure a
// cria::Error naming the op and the operand.

#include "ops/recurrent_checks.h"

#include <string>

#include "ops/checks.h"

namespace cria::ops {

void check_gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                           const TensorView& beta, const TensorView& state, const TensorView& out) {
    const char* op = "gated_delta_net";
    require_f32(q, op, "q");
    require_f32(k, op, "k");
    require_f32(v, op, "v");
    require_f32(g, op, "g");
    require_f32(beta, op, "beta");
    require_f32(state, op, "state");
    require_f32(out, op, "out");
    const int64_t d = v.ne[0], n_v_heads = v.ne[1], n_tokens = v.ne[2];
    require(d > 0 && n_v_heads > 0, op, "v must have values and heads, got " + shape_string(v));
    require(q.ne[3] == 1 && k.ne[3] == 1 && v.ne[3] == 1 && out.ne[3] == 1, op, "q, k, v and out must be 3-D");
    require(same_shape(q, k), op, "q " + shape_string(q) + " and k " + shape_string(k) + " differ");
    require(q.ne[0] == d, op, "q/k head size " + std::to_string(q.ne[0]) + " must equal v's " + std::to_string(d));
    require(q.ne[2] == n_tokens, op, "q has " + std::to_string(q.ne[2]) + " tokens, v " + std::to_string(n_tokens));
    require(q.ne[1] > 0 && n_v_heads % q.ne[1] == 0, op,
            "value heads " + std::to_string(n_v_heads) + " must be a multiple of key heads " + std::to_string(q.ne[1]));
    require(same_shape(out, v), op, "out " + shape_string(out) + " must have v's shape " + shape_string(v));
    const auto per_head_token = [&](const TensorView& t, const char* name) {
        require(t.ne[0] == n_v_heads && t.ne[1] == n_tokens && t.ne[2] == 1 && t.ne[3] == 1, op,
                std::string(name) + " " + shape_string(t) + " must be [" + std::to_string(n_v_heads) + ", " +
                    std::to_string(n_tokens) + "]");
    };
    per_head_token(g, "g");
    per_head_token(beta, "beta");
    require(state.ne[0] == d * d && state.ne[1] == n_v_heads && state.ne[2] == 1 && state.ne[3] == 1, op,
            "state " + shape_string(state) + " must be [" + std::to_string(d * d) + ", " + std::to_string(n_v_heads) +
                "]");
}

}  // namespace cria::ops
