#pragma once
// The CPU implementation of the op API: kernels chosen by cpu::best_isa() at
// each call (so CRIA_ISA / set_isa_limit apply), work spread over a thread pool.

#include <cstdint>
#include <vector>

#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul_id.h"
#include "cria/ops/ops.h"

namespace cria::ops {

class CpuOps final : public Ops {
public:
    // The pool must outlive this object.
    explicit CpuOps(cpu::ThreadPool& pool) : pool_(pool) {}

    void get_rows(const TensorView& table, const int32_t* ids, int64_t n_ids, const TensorView& out) override;
    void convert(const TensorView& src, const TensorView& dst) override;
    void rms_norm(const TensorView& x, const float* weight, float eps, const TensorView& out) override;
    void layer_norm(const TensorView& x, const float* weight, const float* bias, float eps,
                    const TensorView& out) override;
    void rope(const TensorView& x, const int32_t* positions, const RopeParams& params, const TensorView& out) override;
    void softmax(const TensorView& x, const SoftmaxParams& params, const TensorView& out) override;
    void silu(const TensorView& x, const TensorView& out) override;
    void gelu(const TensorView& x, const TensorView& out) override;
    void gelu_erf(const TensorView& x, const TensorView& out) override;
    void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out) override;
    void geglu(const TensorView& gate, const TensorView& up, const TensorView& out) override;
    void swiglu_oai(const TensorView& gate, const TensorView& up, float alpha, float limit,
                    const TensorView& out) override;
    void add(const TensorView& a, const TensorView& b, const TensorView& out) override;
    void mul(const TensorView& a, const TensorView& b, const TensorView& out) override;
    void scale(const TensorView& x, float s, const TensorView& out) override;
    int64_t argmax(const TensorView& row) override;
    std::vector<std::pair<int32_t, float>> top_k(const TensorView& row, int64_t k) override;
    void attention(const TensorView& q, const TensorView& k, const TensorView& v, const AttentionParams& params,
                   const TensorView& out) override;
    void matmul(const TensorView& w, const TensorView& x, const TensorView& out) override;
    void matmul_swiglu(const TensorView& w, const TensorView& gate, const TensorView& up,
                       const TensorView& out) override;
    void moe_route(const TensorView& logits, const MoeRouteParams& params, int32_t* ids,
                   const TensorView& weights) override;
    void matmul_id(const TensorView& w, const TensorView& x, const int32_t* ids, int64_t n_used,
                   const TensorView& out) override;
    void gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                         const TensorView& beta, const TensorView& state, const GatedDeltaParams& params,
                         const TensorView& out) override;
    void lightning_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& state,
                             const LightningParams& params, const TensorView& out) override;
    void kimi_delta_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                              const TensorView& beta, const TensorView& state, const GatedDeltaParams& params,
                              const TensorView& out) override;
    void ssm_conv(const TensorView& x, const float* weight, int64_t kernel, float* state,
                  const TensorView& out) override;
    void ssm_scan(const TensorView& x, const TensorView& dt, const float* a, const TensorView& b, const TensorView& c,
                  const SsmScanParams& params, float* state, const TensorView& y) override;

    cpu::ThreadPool& pool() { return pool_; }

private:
    cpu::ThreadPool& pool_;
    // Scratch of matmul_id, grown to the largest batch and then reused: a
    // decode step allocates nothing. (One CpuOps serves one caller at a time.)
    matmul::MatmulIdWorkspace moe_workspace_;
    std::vector<float> route_scores_;  // moe_route: 2 x n_expert
    std::vector<int32_t> route_order_;
};

}  // namespace cria::ops
