// The scalar small_gemm and the dispatch by instruction-set level.

#include "ops/small_gemm.h"

namespace cria::ops {

void small_gemm_scalar(const SmallGemm& g) {
    const int64_t rs = a_row_step(g), cs = a_col_step(g);
    for (int64_t i = 0; i < g.m; ++i) {
        float* c = g.c + i * g.ldc;
        for (int64_t j = 0; j < g.n; ++j)
            c[j] = !g.accumulate ? 0.0f
                   : g.c_row_scale ? g.c_scale * (g.c_col_scale ? g.c_col_scale[j] : 1.0f) * c[j] * g.c_row_scale[i]
                                   : g.c_scale * (g.c_col_scale ? g.c_col_scale[j] : 1.0f) * c[j];
        for (int64_t p = 0; p < g.k; ++p) {
            const float a = g.a[i * rs + p * cs];
            const float* b = g.b + p * g.ldb;
            for (int64_t j = 0; j < g.n; ++j) c[j] += a * b[j];
        }
    }
}

void small_gemm(const SmallGemm& g, cpu::Isa isa) {
#if defined(__x86_64__)
    if (isa >= cpu::Isa::Avx512) return small_gemm_avx512(g);
    if (isa >= cpu::Isa::Avx2) return small_gemm_avx2(g);
#endif
    (void)isa;
    small_gemm_scalar(g);
}

void small_gemm(const SmallGemm& g) { small_gemm(g, cpu::best_isa()); }

}  // namespace cria::ops
