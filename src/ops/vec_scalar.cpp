// Portable row primitives: the generic bodies with a one-lane "vector".

#include <cmath>
#include <cstdint>
#include <limits>

#include "cria/core/float16.h"
#include "ops/vec.h"
#include "ops/vec_generic.h"

namespace cria::ops {
namespace {

struct ScalarTraits {
    static constexpr int64_t kWidth = 1;
    using V = float;
    static V zero() { return 0.0f; }
    static V set1(float f) { return f; }
    static V load(const float* p) { return *p; }
    static void store(float* p, V v) { *p = v; }
    static V load_partial(const float* p, int64_t, float) { return *p; }
    static void store_partial(float* p, V v, int64_t) { *p = v; }
    static V load_f16_partial(const uint16_t* p, int64_t) { return f16_to_f32(*p); }
    static V load_bf16_partial(const uint16_t* p, int64_t) { return bf16_to_f32(*p); }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V mul(V a, V b) { return a * b; }
    static V div(V a, V b) { return a / b; }
    static V fma(V a, V b, V c) { return a * b + c; }
    static V max(V a, V b) { return a > b ? a : b; }
    static float reduce_add(V v) { return v; }
    static float reduce_max(V v) { return v; }
    static V exp(V v) { return std::exp(v); }
    static V select_lt(V a, V b, V t, V f) { return a < b ? t : f; }
};

constexpr VecKernels kScalarTable = generic::make_table<ScalarTraits>();

}  // namespace

const VecKernels& vec_kernels_scalar() { return kScalarTable; }

const VecKernels& vec_kernels(cpu::Isa isa) {
    if (isa >= cpu::Isa::Avx512) {
        if (const VecKernels* t = vec_kernels_avx512()) return *t;
    }
    if (isa >= cpu::Isa::Avx2) {
        if (const VecKernels* t = vec_kernels_avx2()) return *t;
    }
    return kScalarTable;
}

}  // namespace cria::ops
