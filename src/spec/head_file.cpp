// Checked reads of a drafter head's GGUF.

#include "spec/head_file.h"

#include <algorithm>

#include "cria/core/error.h"
#include "cria/quant/quantize.h"

namespace cria::spec {

void head_file_error(const gguf::File& f, const std::string& arch, const std::string& what) {
    throw Error(f.path() + ": " + arch + " draft: " + what);
}

std::string head_shape_text(const gguf::TensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < std::max<uint32_t>(t.n_dims, 1); ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

namespace {

const gguf::TensorInfo* find_checked(const gguf::File& f, const std::string& arch, const std::string& name,
                                     uint64_t ne0, uint64_t ne1, bool required) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) {
        if (required) head_file_error(f, arch, "missing tensor '" + name + "'");
        return nullptr;
    }
    if (t->n_dims > 2 || t->ne[0] != ne0 || t->ne[1] != ne1)
        head_file_error(f, arch,
                        "tensor '" + name + "' has shape " + head_shape_text(*t) + ", expected [" +
                            std::to_string(ne0) + (ne1 > 1 ? ", " + std::to_string(ne1) : "") + "]");
    if (!quant::can_dequantize(t->type)) head_file_error(f, arch, "tensor '" + name + "' has an unsupported type");
    return t;
}

}  // namespace

ops::TensorView head_matrix(const gguf::File& f, const std::string& arch, const std::string& name, uint64_t ne0,
                            uint64_t ne1, bool required) {
    const gguf::TensorInfo* t = find_checked(f, arch, name, ne0, ne1, required);
    if (!t) return {};
    return ops::TensorView::contiguous(t->type, f.tensor_data(*t).data(),
                                       {static_cast<int64_t>(ne0), static_cast<int64_t>(ne1)});
}

std::vector<float> head_vector(const gguf::File& f, const std::string& arch, const std::string& name, uint64_t n,
                               bool required) {
    const gguf::TensorInfo* t = find_checked(f, arch, name, n, 1, required);
    if (!t) return {};
    std::vector<float> v(n);
    quant::dequantize_row(t->type, f.tensor_data(*t).data(), v.data(), static_cast<int64_t>(n));
    return v;
}

uint32_t head_u32(const gguf::File& f, const std::string& arch, const std::string& key) {
    const auto v = f.get_u32(key);
    if (!v) head_file_error(f, arch, "missing or invalid key '" + key + "'");
    return *v;
}

}  // namespace cria::spec
