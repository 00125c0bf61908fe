#pragma once
// A non-owning view of a tensor: element type, up to 4 dimensions, strides in
// bytes, and a data pointer. Dimension 0 is the innermost (ggml's ne0): a
// "row" is ne[0] consecutive values, and rows are addressed by (i1, i2, i3).
// For quantized types ne[0] must be a whole number of blocks, and only whole
// rows are addressed (row()); nb[0] is the element size for plain types and 0
// for block types.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "cria/core/element_type.h"
#include "cria/matmul/packing.h"

namespace cria::ops {

struct TensorView {
    ElementType type = ElementType::F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // sizes, innermost first
    std::array<size_t, 4> nb{0, 0, 0, 0};   // strides in bytes
    void* data = nullptr;
    // Weights rearranged for the matmul kernels (matmul/packing.h) at load
    // time. Such a view is only an operand of matmul: its rows are no longer
    // addressable, so every other op refuses it.
    matmul::Packing weight_packing = matmul::Packing::None;

    // A view of densely packed rows: shape {ne0, ne1, ...} (missing dims = 1).
    // Throws cria::Error for a type/ne0 that does not form whole blocks.
    static TensorView contiguous(ElementType type, void* data, std::initializer_list<int64_t> shape);
    static TensorView contiguous(ElementType type, const void* data, std::initializer_list<int64_t> shape) {
        return contiguous(type, const_cast<void*>(data), shape);
    }

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    // Bytes of one row's values (ne[0] values of `type`).
    size_t row_bytes() const;

    char* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
        return static_cast<char*>(data) + static_cast<size_t>(i1) * nb[1] + static_cast<size_t>(i2) * nb[2] +
               static_cast<size_t>(i3) * nb[3];
    }
    // Row by flat index over (i1, i2, i3), i1 fastest.
    char* row_at(int64_t flat) const { return row(flat % ne[1], (flat / ne[1]) % ne[2], flat / (ne[1] * ne[2])); }
    float* row_f32(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const { return reinterpret_cast<float*>(row(i1, i2, i3)); }

    // Values inside a row are packed (always true for views made here).
    bool rows_are_packed() const;
    // All rows follow each other with no gaps.
    bool is_contiguous() const;
};

// Same type and shape (strides may differ).
bool same_shape(const TensorView& a, const TensorView& b);

}  // namespace cria::ops
