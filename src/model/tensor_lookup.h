#pragma once
// Finding a model's tensors by name and checking their shapes, shared by the
// fast path's weight loader (model.cpp) and the reference forward (which
// dequantises everything to float64 and must validate the same way).

#include <cstdint>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/quant/quantize.h"

namespace cria::model::detail {

// The tensor `name`; throws cria::Error naming the file when it is missing.
inline const gguf::TensorInfo& require_tensor(const gguf::File& file, const std::string& name) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) throw Error(file.path() + ": missing tensor '" + name + "'");
    return *t;
}

// The 2-D tensor `name` of shape [cols, rows] (ggml's ne0, ne1).
inline const gguf::TensorInfo& require_matrix(const gguf::File& file, const std::string& name, uint64_t cols,
                                              uint64_t rows) {
    const gguf::TensorInfo& t = require_tensor(file, name);
    if (t.n_dims != 2 || t.ne[0] != cols || t.ne[1] != rows)
        throw Error(file.path() + ": tensor '" + name + "' should have shape [" + std::to_string(cols) + ", " +
                    std::to_string(rows) + "]");
    return t;
}

// The tensor `name` of n values as floats (norm weights, biases, rope factors).
inline std::vector<float> read_vector(const gguf::File& file, const std::string& name, uint64_t n) {
    const gguf::TensorInfo& t = require_tensor(file, name);
    if (t.n_elements() != n)
        throw Error(file.path() + ": tensor '" + name + "' should have " + std::to_string(n) + " values");
    if (!quant::can_dequantize(t.type)) throw Error(file.path() + ": tensor '" + name + "' has an unsupported type");
    std::vector<float> v(n);
    quant::dequantize_row(t.type, file.tensor_data(t).data(), v.data(), static_cast<int64_t>(n));
    return v;
}

}  // namespace cria::model::detail
