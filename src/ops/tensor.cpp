// TensorView helpers.

#include "cria/ops/tensor.h"

#include <string>

#include "cria/core/error.h"

namespace cria::ops {

TensorView TensorView::contiguous(ElementType type, void* data, std::initializer_list<int64_t> shape) {
    if (shape.size() == 0 || shape.size() > 4) throw Error("tensor view: 1 to 4 dimensions expected");
    TensorView v;
    v.type = type;
    v.data = data;
    size_t d = 0;
    for (int64_t n : shape) {
        if (n < 0) throw Error("tensor view: negative dimension");
        v.ne[d++] = n;
    }
    const ElementTypeInfo* info = element_type_info(type);
    if (info == nullptr) throw Error("tensor view: unknown element type");
    const auto row = row_size_bytes(type, static_cast<uint64_t>(v.ne[0]));
    if (!row) {
        throw Error("tensor view: " + std::to_string(v.ne[0]) + " values do not form whole blocks of " +
                    std::string(info->name));
    }
    v.nb[0] = info->block_size == 1 ? info->type_size : 0;
    v.nb[1] = static_cast<size_t>(*row);
    v.nb[2] = v.nb[1] * static_cast<size_t>(v.ne[1]);
    v.nb[3] = v.nb[2] * static_cast<size_t>(v.ne[2]);
    return v;
}

size_t TensorView::row_bytes() const {
    const auto row = row_size_bytes(type, static_cast<uint64_t>(ne[0]));
    if (!row) throw Error("tensor view: row of " + std::to_string(ne[0]) + " values is not a whole number of blocks");
    return static_cast<size_t>(*row);
}

bool TensorView::rows_are_packed() const {
    const ElementTypeInfo* info = element_type_info(type);
    return info != nullptr && (info->block_size != 1 || nb[0] == info->type_size);
}

bool TensorView::is_contiguous() const {
    return rows_are_packed() && nb[1] == row_bytes() && nb[2] == nb[1] * static_cast<size_t>(ne[1]) &&
           nb[3] == nb[2] * static_cast<size_t>(ne[2]);
}

bool same_shape(const TensorView& a, const TensorView& b) { return a.type == b.type && a.ne == b.ne; }

}  // namespace cria::ops
