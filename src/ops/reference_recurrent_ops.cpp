// The double-precision references of ReferenceOps::gated_delta_net,
// lightning_attention and kimi_delta_attention: the recurrences written
// exactly as ops.h states them, token by token, in double.

#include <cmath>
#include <vector>

#include "ops/lightning_checks.h"
#include "ops/recurrent_checks.h"
#include "ops/reference_ops.h"

namespace cria::ops {

void ReferenceOps::gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v,
                                   const TensorView& g, const TensorView& beta, const TensorView& state,
                                   const GatedDeltaParams& params, const TensorView& out) {
    check_gated_delta_net(q, k, v, g, beta, state, out);
    const int64_t d = v.ne[0], n_v_heads = v.ne[1], n_k_heads = q.ne[1], n_tokens = v.ne[2];
    const int64_t group = n_v_heads / n_k_heads;
    for (int64_t h = 0; h < n_v_heads; ++h) {
        const int64_t kh = params.head_map == DeltaHeadMap::Tiled ? h % n_k_heads : h / group;
        float* stored = state.row_f32(h);
        std::vector<double> M(stored, stored + d * d);  // M[j * d + i]: key i, value j
        for (int64_t t = 0; t < n_tokens; ++t) {
            const float* qt = q.row_f32(kh, t);
            const float* kt = k.row_f32(kh, t);
            const float* vt = v.row_f32(h, t);
            const double decay = std::exp(static_cast<double>(g.row_f32(t)[h]));
            const double b = beta.row_f32(t)[h];
            for (double& m : M) m *= decay;
            for (int64_t j = 0; j < d; ++j) {
                double u = 0;
                for (int64_t i = 0; i < d; ++i) u += M[j * d + i] * kt[i];
                const double delta = b * (vt[j] - u);
                for (int64_t i = 0; i < d; ++i) M[j * d + i] += kt[i] * delta;
            }
            float* o = out.row_f32(h, t);
            for (int64_t j = 0; j < d; ++j) {
                double acc = 0;
                for (int64_t i = 0; i < d; ++i) acc += M[j * d + i] * qt[i];
                o[j] = static_cast<float>(acc * params.scale);
            }
        }
        for (int64_t i = 0; i < d * d; ++i) stored[i] = static_cast<float>(M[i]);
    }
}

void ReferenceOps::kimi_delta_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                        const TensorView& g, const TensorView& beta, const TensorView& state,
                                        const GatedDeltaParams& params, const TensorView& out) {
    check_kimi_delta_attention(q, k, v, g, beta, state, out);
    const int64_t d = v.ne[0], n_v_heads = v.ne[1], n_k_heads = q.ne[1], n_tokens = v.ne[2];
    const int64_t group = n_v_heads / n_k_heads;
    for (int64_t h = 0; h < n_v_heads; ++h) {
        const int64_t kh = params.head_map == DeltaHeadMap::Tiled ? h % n_k_heads : h / group;
        float* stored = state.row_f32(h);
        std::vector<double> M(stored, stored + d * d);  // M[j * d + i]: key i, value j
        for (int64_t t = 0; t < n_tokens; ++t) {
            const float* qt = q.row_f32(kh, t);
            const float* kt = k.row_f32(kh, t);
            const float* vt = v.row_f32(h, t);
            const float* gt = g.row_f32(h, t);
            const double b = beta.row_f32(t)[h];
            for (int64_t j = 0; j < d; ++j)
                for (int64_t i = 0; i < d; ++i) M[j * d + i] *= std::exp(static_cast<double>(gt[i]));
            for (int64_t j = 0; j < d; ++j) {
                double u = 0;
                for (int64_t i = 0; i < d; ++i) u += M[j * d + i] * kt[i];
                const double delta = b * (vt[j] - u);
                for (int64_t i = 0; i < d; ++i) M[j * d + i] += kt[i] * delta;
            }
            float* o = out.row_f32(h, t);
            for (int64_t j = 0; j < d; ++j) {
                double acc = 0;
                for (int64_t i = 0; i < d; ++i) acc += M[j * d + i] * qt[i];
                o[j] = static_cast<float>(acc * params.scale);
            }
        }
        for (int64_t i = 0; i < d * d; ++i) stored[i] = static_cast<float>(M[i]);
    }
}

}  // namespace cria::ops

namespace cria::ops {

// Lightning attention in double, token by token as ops.h states it:
// M <- gamma M + k v^T, o = M^T q.
void ReferenceOps::lightning_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                       const TensorView& state, const LightningParams& params, const TensorView& out) {
    check_lightning_attention(q, k, v, state, params, out);
    const int64_t d = q.ne[0], n_head = q.ne[1], n_tokens = q.ne[2];
    for (int64_t h = 0; h < n_head; ++h) {
        float* stored = state.row_f32(h);
        std::vector<double> M(stored, stored + d * d);  // M[j * d + i]: key i, value j
        const double decay = std::exp(-static_cast<double>(params.rates[h]));
        for (int64_t t = 0; t < n_tokens; ++t) {
            const float* qt = q.row_f32(h, t);
            const float* kt = k.row_f32(h, t);
            const float* vt = v.row_f32(h, t);
            float* o = out.row_f32(h, t);
            for (int64_t j = 0; j < d; ++j) {
                double acc = 0;
                for (int64_t i = 0; i < d; ++i) {
                    double& m = M[j * d + i];
                    m = decay * m + static_cast<double>(kt[i]) * vt[j];
                    acc += m * qt[i];
                }
                o[j] = static_cast<float>(acc);
            }
        }
        for (int64_t i = 0; i < d * d; ++i) stored[i] = static_cast<float>(M[i]);
    }
}

}  // namespace cria::ops
