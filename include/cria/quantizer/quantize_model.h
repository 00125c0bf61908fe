#pragma once
// Quantizing a whole GGUF model file (what `cria quantize` runs).
//
// Streaming: the input is mapped, and each tensor is converted to f32 a chunk
// of rows at a time, quantized by the thread pool and written before the next
// one is touched; input pages already used are released again. Peak memory is
// about one output tensor plus a few row chunks per thread.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cria/quantizer/imatrix.h"
#include "cria/quantizer/type_mix.h"

namespace cria::quantizer {

struct QuantizeOptions {
    MixOptions mix;
    bool allow_requantize = false;
    int n_threads = 0;                // <= 0: one per hardware thread
    const ImportanceMatrix* imatrix = nullptr;
    std::string imatrix_file;         // recorded in the metadata when given
};

struct TensorReport {
    std::string name;
    ElementType from;
    ElementType to;
    uint64_t bytes_before = 0;
    uint64_t bytes_after = 0;
    std::string note;
};

struct QuantizeSummary {
    std::vector<TensorReport> tensors;  // in output order
    uint64_t n_elements = 0;
    uint64_t bytes_before = 0;
    uint64_t bytes_after = 0;
    int n_fallback = 0;
    double bpw_before() const { return n_elements ? bytes_before * 8.0 / n_elements : 0; }
    double bpw_after() const { return n_elements ? bytes_after * 8.0 / n_elements : 0; }
};

// Called after each tensor: (tensors done, tensor count, report of that tensor).
using QuantizeProgress = std::function<void(size_t, size_t, const TensorReport&)>;

// Quantizes `in_path` into `out_path`. Throws cria::Error for an unreadable
// input, a tensor that would need requantizing without allow_requantize, an
// imatrix of the wrong size, or a failed write (the partial output is removed).
QuantizeSummary quantize_model(const std::string& in_path, const std::string& out_path,
                               const QuantizeOptions& options, const QuantizeProgress& progress = {});

}  // namespace cria::quantizer
