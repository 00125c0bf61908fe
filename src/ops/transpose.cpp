// The scalar transpose and the dispatch by instruction-set level.

#include "ops/transpose.h"

namespace cria::ops {

void transpose_scalar(const Transpose& t) {
    for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = 0; c < t.cols; ++c) t.dst[r * t.ld_dst + c] = t.src[c * t.ld_src + r];
}

void transpose(const Transpose& t, cpu::Isa isa) {
#if defined(__x86_64__)
    if (isa >= cpu::Isa::Avx2) return transpose_avx2(t);
#endif
    (void)isa;
    transpose_scalar(t);
}

void transpose(const Transpose& t) { transpose(t, cpu::best_isa()); }

}  // namespace cria::ops
