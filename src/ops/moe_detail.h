#pragma once
// The routing of one token (llama.cpp's build_moe_ffn, steps 2-8), written
// once for float (CpuOps) and double (ReferenceOps). See MoeRouteParams.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cria/ops/ops.h"
#include "cria/ops/tensor.h"

namespace cria::ops {

// Argument checks shared by CpuOps and ReferenceOps (moe.cpp).
void check_moe_route(const TensorView& logits, const MoeRouteParams& p, const int32_t* ids, const TensorView& weights);
// allow_packed: w may be packed for the matmul kernels (CpuOps; ReferenceOps
// reads rows and refuses packed weights).
void check_matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                     const TensorView& out, bool allow_packed = false);

namespace moe_detail {

// l: n_expert logits; pi, sel: n_expert scratch; order: n_expert scratch.
// Writes the k ids (descending selection score, ties to the lower id, NaN
// last) and their weights.
template <class T>
void route_token(const float* l, int64_t n_expert, const MoeRouteParams& p, T* pi, T* sel, int32_t* order,
                 int32_t* ids, float* weights) {
    const int64_t k = p.n_used;
    switch (p.gating) {
        case MoeGating::Softmax: {
            T max = -INFINITY;
            for (int64_t e = 0; e < n_expert; ++e) max = std::max<T>(max, static_cast<T>(l[e]));
            double sum = 0;
            for (int64_t e = 0; e < n_expert; ++e) {
                pi[e] = std::exp(static_cast<T>(l[e]) - max);
                sum += pi[e];
            }
            for (int64_t e = 0; e < n_expert; ++e) pi[e] = static_cast<T>(pi[e] / sum);
            break;
        }
        case MoeGating::Sigmoid:
            for (int64_t e = 0; e < n_expert; ++e) pi[e] = T(1) / (T(1) + std::exp(-static_cast<T>(l[e])));
            break;
        case MoeGating::SoftmaxWeight:
            for (int64_t e = 0; e < n_expert; ++e) pi[e] = static_cast<T>(l[e]);
            break;
    }
    for (int64_t e = 0; e < n_expert; ++e) {
        sel[e] = pi[e] + (p.selection_bias ? static_cast<T>(p.selection_bias[e]) : T(0));
        order[e] = static_cast<int32_t>(e);
    }
    std::partial_sort(order, order + k, order + n_expert, [sel](int32_t a, int32_t b) {
        const bool an = std::isnan(sel[a]), bn = std::isnan(sel[b]);
        if (an || bn) return !an && (bn || a < b);
        return sel[a] > sel[b] || (sel[a] == sel[b] && a < b);
    });
    T w[256];
    T* wv = k <= 256 ? w : nullptr;
    std::vector<T> big;
    if (!wv) {
        big.resize(static_cast<size_t>(k));
        wv = big.data();
    }
    for (int64_t j = 0; j < k; ++j) {
        ids[j] = order[j];
        wv[j] = pi[order[j]];
    }
    if (p.gating == MoeGating::SoftmaxWeight) {
        T max = -INFINITY;
        for (int64_t j = 0; j < k; ++j) max = std::max(max, wv[j]);
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) {
            wv[j] = std::exp(wv[j] - max);
            sum += wv[j];
        }
        for (int64_t j = 0; j < k; ++j) wv[j] = static_cast<T>(wv[j] / sum);
    }
    if (p.norm_weights) {
        T sum = 0;
        for (int64_t j = 0; j < k; ++j) sum += wv[j];
        sum = std::max<T>(sum, static_cast<T>(6.103515625e-5));
        for (int64_t j = 0; j < k; ++j) wv[j] /= sum;
    }
    if (p.weights_scale != 0.0f && p.weights_scale != 1.0f)
        for (int64_t j = 0; j < k; ++j) wv[j] *= static_cast<T>(p.weights_scale);
    for (int64_t j = 0; j < k; ++j) weights[j] = static_cast<float>(wv[j]);
}

}  // namespace moe_detail
}  // namespace cria::ops
