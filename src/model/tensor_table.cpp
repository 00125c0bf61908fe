#include "model/tensor_table.h"

#include <unordered_set>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/quant/quantize.h"

namespace cria::model {

void TensorTable::vector(std::string name, uint64_t n, std::vector<float>* dst, Need need) {
    entries_.push_back({std::move(name), {n}, need, Kind::Vector, dst, nullptr, nullptr});
}

void TensorTable::values(std::string name, std::vector<uint64_t> shape, std::vector<float>* dst, Need need) {
    entries_.push_back({std::move(name), std::move(shape), need, Kind::Vector, dst, nullptr, nullptr});
}

void TensorTable::matrix(std::string name, uint64_t cols, uint64_t rows, ops::TensorView* dst, Need need) {
    entries_.push_back({std::move(name), {cols, rows}, need, Kind::Matrix, nullptr, dst, nullptr});
}

void TensorTable::lookup_matrix(std::string name, uint64_t cols, uint64_t rows, ops::TensorView* dst) {
    entries_.push_back({std::move(name), {cols, rows}, Need::Required, Kind::LookupMatrix, nullptr, dst, nullptr});
}

void TensorTable::linear(const std::string& base, uint64_t cols, uint64_t rows, Linear* dst, Need need,
                         ScaleUse scale, bool use_bias) {
    matrix(base + ".weight", cols, rows, &dst->w, need);
    entries_.back().linear = dst;  // the layer the matrix belongs to (LoRA targets)
    if (use_bias)
        entries_.push_back({base + ".bias", {rows}, Need::Optional, Kind::Bias, &dst->bias, nullptr, nullptr});
    else
        ignored(base + ".bias");
    if (scale == ScaleUse::Ignored) {
        ignored(base + ".scale");
    } else {
        dst->bias_before_scale = scale == ScaleUse::AfterBias;
        entries_.push_back({base + ".scale", {1}, Need::Optional, Kind::Scale, nullptr, nullptr, dst});
    }
    ignored(base + ".input_scale");
}

void TensorTable::experts(const std::string& base, uint64_t cols, uint64_t rows, uint64_t n_expert,
                          ExpertLinear* dst, Need need, ScaleUse scale, bool bias) {
    entries_.push_back({base + ".weight", {cols, rows, n_expert}, need, Kind::ExpertMatrix, nullptr, &dst->w, nullptr});
    if (bias)
        entries_.push_back({base + ".bias", {rows, n_expert}, Need::Optional, Kind::Bias, &dst->bias, nullptr, nullptr});
    if (scale == ScaleUse::Ignored)
        ignored(base + ".scale");
    else
        vector(base + ".scale", n_expert, &dst->scale, Need::Optional);
    ignored(base + ".input_scale");
}

void TensorTable::matrix_stack(std::string name, uint64_t cols, uint64_t rows, uint64_t n, ops::TensorView* dst,
                               Need need) {
    entries_.push_back({std::move(name), {cols, rows, n}, need, Kind::ExpertMatrix, nullptr, dst, nullptr});
}

void TensorTable::experts_gate_up(const std::string& base, uint64_t cols, uint64_t rows, uint64_t n_expert,
                                  ExpertLinear* gate, ExpertLinear* up, Need need) {
    entries_.push_back({base + ".weight", {cols, 2 * rows, n_expert}, need, Kind::ExpertGateUp, nullptr, &gate->w,
                        nullptr, &up->w});
    ignored(base + ".input_scale");
}

void TensorTable::ignored(std::string name) {
    entries_.push_back({std::move(name), {}, Need::Optional, Kind::Ignored, nullptr, nullptr, nullptr});
}

void TensorTable::join(std::vector<Linear*> parts, Linear* target) { joins_.push_back({std::move(parts), target}); }

std::string layer_tensor(uint32_t layer, const char* name) { return "blk." + std::to_string(layer) + "." + name; }

namespace {

std::string shape_text(const std::vector<uint64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// The tensor has exactly `shape` (trailing dimensions of 1 allowed, as ggml).
bool has_shape(const gguf::TensorInfo& t, const std::vector<uint64_t>& shape) {
    for (uint32_t d = 0; d < 4; ++d) {
        const uint64_t want = d < shape.size() ? shape[d] : 1;
        const uint64_t got = d < t.n_dims ? t.ne[d] : 1;
        if (want != got) return false;
    }
    return true;
}

std::vector<float> to_floats(const gguf::File& file, const gguf::TensorInfo& t) {
    if (!quant::can_dequantize(t.type)) throw Error(file.path() + ": tensor '" + t.name + "' has an unsupported type");
    std::vector<float> v(t.n_elements());
    quant::dequantize_row(t.type, file.tensor_data(t).data(), v.data(), static_cast<int64_t>(v.size()));
    return v;
}

}  // namespace

void load_tensors(const gguf::File& file, const TensorTable& table, const std::string& arch_name) {
    std::unordered_set<std::string_view> known;
    for (const TensorTable::Entry& e : table.entries()) {
        known.insert(e.name);
        const gguf::TensorInfo* t = file.find_tensor(e.name);
        if (!t) {
            if (e.need == Need::Required) throw Error(file.path() + ": missing tensor '" + e.name + "'");
            continue;
        }
        if (e.kind == TensorTable::Kind::Ignored) continue;

        if (!has_shape(*t, e.shape))
            throw Error(file.path() + ": tensor '" + e.name + "' should have shape " + shape_text(e.shape));
        switch (e.kind) {
            case TensorTable::Kind::Vector:
            case TensorTable::Kind::Bias: *e.vector = to_floats(file, *t); break;
            case TensorTable::Kind::Scale:
                e.linear->scale = to_floats(file, *t)[0];
                e.linear->has_scale = true;
                break;
            case TensorTable::Kind::Matrix:
            case TensorTable::Kind::LookupMatrix:
                *e.view = ops::TensorView::contiguous(t->type, file.tensor_data(*t).data(),
                                                      {static_cast<int64_t>(e.shape[0]), static_cast<int64_t>(e.shape[1])});
                break;
            case TensorTable::Kind::ExpertMatrix:
                *e.view = ops::TensorView::contiguous(t->type, file.tensor_data(*t).data(),
                                                      {static_cast<int64_t>(e.shape[0]), static_cast<int64_t>(e.shape[1]),
                                                       static_cast<int64_t>(e.shape[2])});
                break;
            case TensorTable::Kind::ExpertGateUp: {
                // Each half keeps the merged tensor's expert stride.
                const int64_t cols = static_cast<int64_t>(e.shape[0]), rows = static_cast<int64_t>(e.shape[1] / 2),
                              n_expert = static_cast<int64_t>(e.shape[2]);
                const ops::TensorView all = ops::TensorView::contiguous(t->type, file.tensor_data(*t).data(),
                                                                        {cols, 2 * rows, n_expert});
                ops::TensorView half = all;
                half.ne[1] = rows;
                *e.view = half;
                half.data = all.row(rows);
                *e.second_view = half;
                break;
            }
            case TensorTable::Kind::Ignored: break;
        }
    }
    for (const gguf::TensorInfo& t : file.tensors())
        if (!known.contains(t.name))
            throw Error(file.path() + ": tensor '" + t.name + "' is not part of architecture '" + arch_name +
                        "' (llama.cpp refuses such a file too)");
}

}  // namespace cria::model
