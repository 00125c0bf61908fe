// F32 rows into any storable type (the KV cache write).

#include <cstring>
#include <string>

#include "cria/core/float16.h"
#include "cria/ops/cpu_ops.h"
#include "cria/quant/quantize.h"
#include "ops/checks.h"
#include "ops/parallel.h"

namespace cria::ops {

void CpuOps::convert(const TensorView& src, const TensorView& dst) {
    require_f32(src, "convert", "src");
    require_data(dst, "convert", "dst");
    require(src.ne == dst.ne, "convert", "shapes differ: " + shape_string(src) + " vs " + shape_string(dst));
    require(dst.type == ElementType::F32 || quant::can_quantize(dst.type), "convert",
            "cannot store values as " + std::string(element_type_name(dst.type)));
    require(row_size_bytes(dst.type, static_cast<uint64_t>(dst.ne[0])).has_value(), "convert",
            std::to_string(dst.ne[0]) + " values are not whole blocks of " + std::string(element_type_name(dst.type)));
    const int64_t n = src.ne[0];
    for_each_row(pool_, src.n_rows(), n, [&](int64_t r, int) {
        const float* in = reinterpret_cast<const float*>(src.row_at(r));
        char* out = dst.row_at(r);
        if (dst.type == ElementType::F32) {
            std::memmove(out, in, static_cast<size_t>(n) * sizeof(float));
        } else {
            quant::quantize_row(dst.type, in, out, n);
        }
    });
}

}  // namespace cria::ops
