// The op API's matmul: the cria_matmul kernels over the pool.

#include <string>

#include "cria/matmul/matmul.h"
#include "cria/ops/cpu_ops.h"
#include "ops/checks.h"
#include "ops/vec.h"

namespace cria::ops {

namespace {

void check_matmul(const TensorView& w, const TensorView& x, const TensorView& out) {
    if (w.weight_packing == matmul::Packing::None)
        require_data(w, "matmul", "w");
    else
        require(w.data != nullptr, "matmul", "w has no data");
    require_f32(x, "matmul", "x");
    require_f32(out, "matmul", "out");
    // Messages built only on failure: this runs several times per layer and token.
    const auto fail = [](const std::string& what) { require(false, "matmul", what); };
    if (w.ne[2] != 1 || w.ne[3] != 1) fail("w must be 2-D, got " + shape_string(w));
    if (x.ne[0] != w.ne[0]) fail("x " + shape_string(x) + " does not match w " + shape_string(w));
    if (x.ne[2] != 1 || x.ne[3] != 1 || out.ne[2] != 1 || out.ne[3] != 1) fail("x and out must be 2-D");
    if (out.ne[0] != w.ne[1] || out.ne[1] != x.ne[1])
        fail("out " + shape_string(out) + " must be [" + std::to_string(w.ne[1]) + ", " + std::to_string(x.ne[1]) + "]");
    if (x.nb[1] % sizeof(float) != 0 || out.nb[1] % sizeof(float) != 0) fail("row strides must be whole floats");
}

matmul::MatmulArgs matmul_args(const TensorView& w, const TensorView& x, const TensorView& out) {
    matmul::MatmulArgs args;
    args.w = matmul::WeightMatrix{w.type, w.data, w.ne[1], w.ne[0], w.nb[1], w.weight_packing};
    args.x = reinterpret_cast<const float*>(x.data);
    args.n = x.ne[1];
    args.x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
    args.y = reinterpret_cast<float*>(out.data);
    args.y_stride = static_cast<int64_t>(out.nb[1] / sizeof(float));
    args.r0 = 0;
    args.r1 = w.ne[1];
    return args;
}

}  // namespace

void CpuOps::matmul(const TensorView& w, const TensorView& x, const TensorView& out) {
    check_matmul(w, x, out);
    matmul::matmul(matmul_args(w, x, out), pool_);
}

void CpuOps::matmul_swiglu(const TensorView& w, const TensorView& gate, const TensorView& up, const TensorView& out) {
    check_matmul(w, gate, out);
    require_f32(up, "matmul_swiglu", "up");
    require_same_shape(gate, up, "matmul_swiglu");
    if (up.nb[1] != gate.nb[1]) require(false, "matmul_swiglu", "gate and up must have the same row stride");
    matmul::MatmulArgs args = matmul_args(w, gate, out);
    // The row kernel swiglu() runs over each row: the same bits per row.
    args.combine = vec_kernels().swiglu;
    args.x2 = reinterpret_cast<const float*>(up.data);
    matmul::matmul(args, pool_);
}

}  // namespace cria::ops
