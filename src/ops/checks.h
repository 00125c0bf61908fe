#pragma once
// Argument checks shared by the op implementations: every failure is a
// cria::Error naming the op and the problem.

#include <string>

#include "cria/core/error.h"
#include "cria/ops/tensor.h"

namespace cria::ops {

inline std::string shape_string(const TensorView& t) {
    return std::string(element_type_name(t.type)) + "[" + std::to_string(t.ne[0]) + "," + std::to_string(t.ne[1]) +
           "," + std::to_string(t.ne[2]) + "," + std::to_string(t.ne[3]) + "]";
}

inline void require(bool ok, const char* op, const std::string& what) {
    if (!ok) throw Error(std::string(op) + ": " + what);
}

// (The checks every op runs on every call build their messages only on failure.)
inline void require_data(const TensorView& t, const char* op, const char* name) {
    if (t.data == nullptr && t.n_elements() != 0) require(false, op, std::string(name) + " has no data");
    if (t.weight_packing != matmul::Packing::None)
        require(false, op, std::string(name) + " holds weights packed for matmul, which only matmul reads");
    if (!t.rows_are_packed()) require(false, op, std::string(name) + " must have packed rows");
}

inline void require_f32(const TensorView& t, const char* op, const char* name) {
    if (t.type != ElementType::F32) require(false, op, std::string(name) + " must be f32, not " + shape_string(t));
    require_data(t, op, name);
}

inline void require_same_shape(const TensorView& a, const TensorView& b, const char* op) {
    if (a.ne != b.ne) require(false, op, "shapes differ: " + shape_string(a) + " vs " + shape_string(b));
}

}  // namespace cria::ops
