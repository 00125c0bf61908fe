// Element-wise ops and activations: add, mul, scale, SiLU, GELU, SwiGLU, GeGLU
// (the SIMD row primitives of vec.h), and gpt-oss's SwiGLU-OAI.

#include <algorithm>
#include <cmath>

#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"
#include "ops/parallel.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

void check_unary(const TensorView& x, const TensorView& out, const char* op) {
    require_f32(x, op, "x");
    require_f32(out, op, "out");
    require_same_shape(x, out, op);
}

// b matches a, or is one row broadcast over a's rows.
bool broadcasts(const TensorView& a, const TensorView& b) {
    return b.ne[0] == a.ne[0] && (b.ne == a.ne || b.n_rows() == 1);
}

template <class RowFn>
void binary(cpu::ThreadPool& pool, const TensorView& a, const TensorView& b, const TensorView& out, const char* op,
            RowFn row_fn) {
    require_f32(a, op, "a");
    require_f32(b, op, "b");
    require_f32(out, op, "out");
    require_same_shape(a, out, op);
    if (!broadcasts(a, b))  // (the message built only on failure: this runs for every add, mul, swiglu)
        require(false, op, "b " + shape_string(b) + " neither matches nor broadcasts to " + shape_string(a));
    const bool one_row = b.n_rows() == 1 && a.n_rows() != 1;
    for_each_row(pool, a.n_rows(), a.ne[0], [&](int64_t r, int) {
        const float* pb = reinterpret_cast<const float*>(one_row ? b.row_at(0) : b.row_at(r));
        row_fn(reinterpret_cast<const float*>(a.row_at(r)), pb, reinterpret_cast<float*>(out.row_at(r)), a.ne[0]);
    });
}

template <class RowFn>
void unary(cpu::ThreadPool& pool, const TensorView& x, const TensorView& out, const char* op, RowFn row_fn) {
    check_unary(x, out, op);
    for_each_row(pool, x.n_rows(), x.ne[0], [&](int64_t r, int) {
        row_fn(reinterpret_cast<const float*>(x.row_at(r)), reinterpret_cast<float*>(out.row_at(r)), x.ne[0]);
    });
}

}  // namespace

void CpuOps::add(const TensorView& a, const TensorView& b, const TensorView& out) {
    const VecKernels& k = vec_kernels();
    binary(pool_, a, b, out, "add", k.add);
}

void CpuOps::mul(const TensorView& a, const TensorView& b, const TensorView& out) {
    const VecKernels& k = vec_kernels();
    binary(pool_, a, b, out, "mul", k.mul);
}

void CpuOps::scale(const TensorView& x, float s, const TensorView& out) {
    const VecKernels& k = vec_kernels();
    unary(pool_, x, out, "scale", [&k, s](const float* in, float* y, int64_t n) { k.scale(in, s, y, n); });
}

void CpuOps::silu(const TensorView& x, const TensorView& out) {
    const VecKernels& k = vec_kernels();
    unary(pool_, x, out, "silu", k.silu);
}

void CpuOps::gelu(const TensorView& x, const TensorView& out) {
    const VecKernels& k = vec_kernels();
    unary(pool_, x, out, "gelu", k.gelu);
}

void CpuOps::gelu_erf(const TensorView& x, const TensorView& out) {
    const VecKernels& k = vec_kernels();
    unary(pool_, x, out, "gelu_erf", k.gelu_erf);
}

void CpuOps::swiglu(const TensorView& gate, const TensorView& up, const TensorView& out) {
    require_same_shape(gate, up, "swiglu");
    const VecKernels& k = vec_kernels();
    binary(pool_, gate, up, out, "swiglu", k.swiglu);
}

void CpuOps::geglu(const TensorView& gate, const TensorView& up, const TensorView& out) {
    require_same_shape(gate, up, "geglu");
    const VecKernels& k = vec_kernels();
    binary(pool_, gate, up, out, "geglu", k.geglu);
}

void CpuOps::swiglu_oai(const TensorView& gate, const TensorView& up, float alpha, float limit, const TensorView& out) {
    require_same_shape(gate, up, "swiglu_oai");
    // Plain float loops in ggml's order of operations (only gpt-oss's
    // experts use it; their matrix products dominate by far).
    binary(pool_, gate, up, out, "swiglu_oai", [alpha, limit](const float* g, const float* u, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
            const float x = std::min(g[i], limit);
            const float v = std::clamp(u[i], -limit, limit);
            y[i] = x / (1.0f + std::exp(alpha * -x)) * (v + 1.0f);
        }
    });
}

}  // namespace cria::ops
