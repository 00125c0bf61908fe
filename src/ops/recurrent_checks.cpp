// Shape and type checks of gated_delta_net and kimi_delta_attention: every failure a
// cria::Error naming the op and the operand.

#include "ops/recurrent_checks.h"

#include <string>

#include "ops/checks.h"

namespace cria::ops {

namespace {

// The delta rule's operands, with g one value per value head and token
// (gated_delta_net) or one per key channel too (kimi_delta_attention).
void check_delta_rule(const char* op, bool gate_per_channel, const TensorView& q, const TensorView& k,
                      const TensorView& v, const TensorView& g, const TensorView& beta, const TensorView& state,
                      const TensorView& out) {
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
    if (gate_per_channel) {
        require(g.ne[0] == d && g.ne[1] == n_v_heads && g.ne[2] == n_tokens && g.ne[3] == 1, op,
                "g " + shape_string(g) + " must be [" + std::to_string(d) + ", " + std::to_string(n_v_heads) + ", " +
                    std::to_string(n_tokens) + "]");
    } else {
        per_head_token(g, "g");
    }
    per_head_token(beta, "beta");
    require(state.ne[0] == d * d && state.ne[1] == n_v_heads && state.ne[2] == 1 && state.ne[3] == 1, op,
            "state " + shape_string(state) + " must be [" + std::to_string(d * d) + ", " + std::to_string(n_v_heads) +
                "]");
}

}  // namespace

void check_gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                           const TensorView& beta, const TensorView& state, const TensorView& out) {
    check_delta_rule("gated_delta_net", false, q, k, v, g, beta, state, out);
}

void check_kimi_delta_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                                const TensorView& beta, const TensorView& state, const TensorView& out) {
    check_delta_rule("kimi_delta_attention", true, q, k, v, g, beta, state, out);
}

}  // namespace cria::ops
