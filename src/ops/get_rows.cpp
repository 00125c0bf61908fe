// Row gather (embedding lookup) from a table of any dequantizable type.

#include <cstring>
#include <string>

#include "cria/ops/cpu_ops.h"
#include "cria/quant/quantize.h"
#include "ops/checks.h"
#include "ops/parallel.h"
#include "ops/vec.h"

namespace cria::ops {

void CpuOps::get_rows(const TensorView& table, const int32_t* ids, int64_t n_ids, const TensorView& out) {
    require_data(table, "get_rows", "table");
    require_f32(out, "get_rows", "out");
    require(n_ids >= 0 && (ids != nullptr || n_ids == 0), "get_rows", "ids are missing");
    require(out.ne[0] == table.ne[0] && out.n_rows() == n_ids, "get_rows",
            "out " + shape_string(out) + " must be [" + std::to_string(table.ne[0]) + ", " + std::to_string(n_ids) + "]");
    require(table.type == ElementType::F32 || table.type == ElementType::F16 || table.type == ElementType::BF16 ||
                quant::can_dequantize(table.type),
            "get_rows", "cannot read rows of type " + std::string(element_type_name(table.type)));
    const int64_t n_table_rows = table.n_rows();
    for (int64_t i = 0; i < n_ids; ++i) {
        require(ids[i] >= 0 && ids[i] < n_table_rows, "get_rows",
                "row id " + std::to_string(ids[i]) + " is outside the table's " + std::to_string(n_table_rows) + " rows");
    }
    const VecKernels& k = vec_kernels();
    const int64_t n = table.ne[0];
    for_each_row(pool_, n_ids, n, [&](int64_t i, int) {
        const char* src = table.row_at(ids[i]);
        float* dst = reinterpret_cast<float*>(out.row_at(i));
        switch (table.type) {
            case ElementType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); break;
            case ElementType::F16: k.f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); break;
            case ElementType::BF16: k.bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); break;
            default: quant::dequantize_row(table.type, src, dst, n); break;
        }
    });
}

}  // namespace cria::ops
