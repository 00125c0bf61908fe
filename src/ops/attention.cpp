// Attention of query tokens over a KV cache. From kTiledAttentionMinTokens
// query tokens on, tiles of queries go through attention_tiled (two small
// matrix products per key block); fewer (decode steps) take the path below.
//
// One query row at a time, flash style: keys are visited in
// blocks, scores of a block are exponentiated against a running maximum, and
// the running sum and output are rescaled whenever the maximum grows, so no
// full score row is ever stored. One task per query token and group of query
// heads sharing a KV head (grouped-query), so each cache row is read, and
// dequantized, once for the whole group.
//
// K and V rows in F32/F16/BF16 are read directly by the SIMD primitives;
// Q8_0/Q4_0 rows are first expanded to floats with the quant module's
// reference dequantizer (correct, not yet fast).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "cria/quant/quantize.h"
#include "ops/attention_tiled.h"
#include "ops/checks.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

constexpr int64_t kBlock = 64;  // keys per block

bool is_kv_type(ElementType t) {
    return t == ElementType::F32 || t == ElementType::F16 || t == ElementType::BF16 || t == ElementType::Q8_0 ||
           t == ElementType::Q4_0;
}

struct Scratch {
    std::vector<float> scores;
    std::vector<float> probs;
    std::vector<float> acc;
    std::vector<float> row;  // a dequantized K or V row
    std::vector<float> max;  // running maximum per query head
    std::vector<float> sum;  // running denominator per query head
};

}  // namespace

void CpuOps::attention(const TensorView& q, const TensorView& kc, const TensorView& vc, const AttentionParams& params,
                       const TensorView& out) {
    const char* op = "attention";
    require_f32(q, op, "q");
    require_f32(out, op, "out");
    require_data(kc, op, "k");
    require_data(vc, op, "v");
    require(is_kv_type(kc.type) && is_kv_type(vc.type), op, "k and v must be f32, f16, bf16, q8_0 or q4_0");
    const int64_t head_dim = q.ne[0], n_heads = q.ne[1], n_tokens = q.ne[2];
    const int64_t n_kv_heads = kc.ne[1], n_kv = kc.ne[2], head_dim_v = vc.ne[0];
    require(q.ne[3] == 1 && kc.ne[3] == 1 && vc.ne[3] == 1 && out.ne[3] == 1, op, "4-D tensors are not supported");
    require(kc.ne[0] == head_dim, op, "k head size " + std::to_string(kc.ne[0]) + " differs from q's " + std::to_string(head_dim));
    require(vc.ne[1] == n_kv_heads && vc.ne[2] == n_kv, op, "v " + shape_string(vc) + " does not match k " + shape_string(kc));
    require(n_kv_heads > 0 && n_heads % n_kv_heads == 0, op,
            std::to_string(n_heads) + " query heads are not a multiple of " + std::to_string(n_kv_heads) + " kv heads");
    require(out.ne[0] == head_dim_v && out.ne[1] == n_heads && out.ne[2] == n_tokens, op,
            "out " + shape_string(out) + " must be [" + std::to_string(head_dim_v) + ", " + std::to_string(n_heads) + ", " +
                std::to_string(n_tokens) + "]");
    require(params.window >= 0 && params.softcap >= 0.0f, op, "window and softcap must not be negative");
    require(params.positions != nullptr || n_tokens <= n_kv, op, "more query tokens than cache entries need positions");
    require(out.data != q.data, op, "out must not alias q");
    if (n_tokens >= kTiledAttentionMinTokens) return attention_tiled(pool_, q, kc, vc, params, out);

    const int64_t group = n_heads / n_kv_heads;
    const VecKernels& k = vec_kernels();
    std::vector<Scratch> scratch(static_cast<size_t>(pool_.size()));

    // Query heads that share a KV head are processed together, so each K and
    // V row is read (and dequantized) once for all of them. Groups are split
    // in halves while there are too few tasks to keep the pool busy.
    int64_t heads_per_task = group;
    while (heads_per_task % 2 == 0 && n_tokens * n_kv_heads * (group / heads_per_task) < 4 * pool_.size()) {
        heads_per_task /= 2;
    }
    const int64_t tasks_per_token = n_heads / heads_per_task;

    pool_.parallel_for(n_tokens * tasks_per_token, [&](int64_t task, int thread) {
        const int64_t t = task / tasks_per_token;
        const int64_t h0 = (task % tasks_per_token) * heads_per_task;  // first query head of this task
        const int64_t kv_head = h0 / group;
        const int64_t pos = params.positions != nullptr ? params.positions[t] : n_kv - n_tokens + t;
        // Visible keys: [lo, hi].
        const int64_t hi = params.causal ? std::min(pos, n_kv - 1) : n_kv - 1;
        const int64_t lo = params.window > 0 ? std::max<int64_t>(0, pos - params.window + 1) : 0;

        const size_t nh = static_cast<size_t>(heads_per_task);
        Scratch& s = scratch[static_cast<size_t>(thread)];
        s.scores.resize(nh * kBlock);
        s.probs.resize(nh * kBlock);
        s.acc.assign(nh * static_cast<size_t>(head_dim_v), 0.0f);
        s.row.resize(static_cast<size_t>(std::max(head_dim, head_dim_v)));
        s.max.assign(nh, -std::numeric_limits<float>::infinity());
        s.sum.assign(nh, 0.0f);
        auto acc_of = [&](size_t g) { return s.acc.data() + g * static_cast<size_t>(head_dim_v); };
        auto query_of = [&](size_t g) {
            return reinterpret_cast<const float*>(q.row(h0 + static_cast<int64_t>(g), t));
        };
        const bool plain_k = kc.type == ElementType::F32 || kc.type == ElementType::F16 || kc.type == ElementType::BF16;
        const bool plain_v = vc.type == ElementType::F32 || vc.type == ElementType::F16 || vc.type == ElementType::BF16;

        for (int64_t start = lo; start <= hi; start += kBlock) {
            const int64_t count = std::min(kBlock, hi - start + 1);
            if (plain_k) {
                // Each head's query stays in registers over the block's keys.
                const auto dots = kc.type == ElementType::F32   ? k.dot_rows
                                  : kc.type == ElementType::F16 ? k.dot_rows_f16
                                                                : k.dot_rows_bf16;
                for (size_t g = 0; g < nh; ++g)
                    dots(query_of(g), kc.row(kv_head, start), kc.nb[2], count, s.scores.data() + g * kBlock, head_dim);
            } else {
                for (int64_t j = 0; j < count; ++j) {
                    quant::dequantize_row(kc.type, kc.row(kv_head, start + j), s.row.data(), head_dim);
                    for (size_t g = 0; g < nh; ++g)
                        s.scores[g * kBlock + static_cast<size_t>(j)] = k.dot(query_of(g), s.row.data(), head_dim);
                }
            }
            for (size_t g = 0; g < nh; ++g) {
                float* scores = s.scores.data() + g * kBlock;
                for (int64_t j = 0; j < count; ++j) {
                    float score = scores[j] * params.scale;
                    if (params.softcap > 0.0f) score = params.softcap * std::tanh(score / params.softcap);
                    scores[j] = score;
                }
            }
            for (size_t g = 0; g < nh; ++g) {
                float* scores = s.scores.data() + g * kBlock;
                const float block_max = k.max(scores, count);
                if (block_max > s.max[g]) {
                    // Rescale what was accumulated against the old maximum.
                    const float factor = std::exp(s.max[g] - block_max);
                    if (s.sum[g] != 0.0f) k.scale(acc_of(g), factor, acc_of(g), head_dim_v);
                    s.sum[g] *= factor;
                    s.max[g] = block_max;
                }
                s.sum[g] += k.exp_shift_sum(scores, s.max[g], s.probs.data() + g * kBlock, count);
            }
            if (plain_v) {
                // Each head's output stays in registers over the block's rows.
                const auto weighted = vc.type == ElementType::F32   ? k.weighted_rows
                                      : vc.type == ElementType::F16 ? k.weighted_rows_f16
                                                                    : k.weighted_rows_bf16;
                for (size_t g = 0; g < nh; ++g)
                    weighted(s.probs.data() + g * kBlock, vc.row(kv_head, start), vc.nb[2], count, acc_of(g), head_dim_v);
            } else {
                for (int64_t j = 0; j < count; ++j) {
                    quant::dequantize_row(vc.type, vc.row(kv_head, start + j), s.row.data(), head_dim_v);
                    for (size_t g = 0; g < nh; ++g) {
                        const float p = s.probs[g * kBlock + static_cast<size_t>(j)];
                        if (p != 0.0f) k.axpy(p, s.row.data(), acc_of(g), head_dim_v);
                    }
                }
            }
        }
        for (size_t g = 0; g < nh; ++g) {
            const int64_t h = h0 + static_cast<int64_t>(g);
            float running_max = s.max[g], running_sum = s.sum[g];
            if (params.sinks != nullptr) {
                // The sink joins the denominator only.
                const float sink = params.sinks[h];
                if (sink > running_max) {
                    const float factor = std::exp(running_max - sink);
                    k.scale(acc_of(g), factor, acc_of(g), head_dim_v);
                    running_sum *= factor;
                    running_max = sink;
                }
                running_sum += std::exp(sink - running_max);
            }
            float* y = reinterpret_cast<float*>(out.row(h, t));
            if (running_sum > 0.0f) {
                k.scale(acc_of(g), 1.0f / running_sum, y, head_dim_v);
            } else {
                // No visible key (and no sink): zeros rather than 0/0.
                std::fill(y, y + head_dim_v, 0.0f);
            }
        }
    });
}

}  // namespace cria::ops
