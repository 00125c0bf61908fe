#include "cria/quantizer/quantize_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/quant/quantize.h"

namespace cria::quantizer {
namespace {

using gguf::TensorInfo;
using gguf::Value;

// A head count may be one number or one per layer; the mix rules want one.
uint32_t u32_or_max(const gguf::File& file, const std::string& key) {
    const Value* v = file.find(key);
    if (!v) return 0;
    if (!v->is_array()) return static_cast<uint32_t>(v->as_u64().value_or(0));
    uint64_t best = 0;
    for (size_t i = 0; i < v->size(); ++i) best = std::max<uint64_t>(best, v->at(i).as_u64().value_or(0));
    return static_cast<uint32_t>(best);
}

ModelFacts read_facts(const gguf::File& file) {
    ModelFacts f;
    f.arch = file.get_string("general.architecture", "");
    if (f.arch.empty()) throw Error("quantize: '" + file.path() + "' has no general.architecture: not a model file");
    f.n_layer = u32_or_max(file, f.arch + ".block_count");
    f.n_head = u32_or_max(file, f.arch + ".attention.head_count");
    f.n_head_kv = u32_or_max(file, f.arch + ".attention.head_count_kv");
    if (f.n_head_kv == 0) f.n_head_kv = f.n_head;
    f.n_expert = u32_or_max(file, f.arch + ".expert_count");
    return f;
}

bool is_quantized(ElementType t) {
    const ElementTypeInfo* info = element_type_info(t);
    return info && info->quantized;
}

uint64_t tensor_bytes(ElementType t, const TensorInfo& info) {
    const auto row = row_size_bytes(t, info.ne[0]);
    if (!row) throw Error("quantize: tensor '" + info.name + "' cannot be stored as " + std::string(element_type_name(t)));
    return *row * (info.n_elements() / info.ne[0]);
}

// Gives the page cache back the input pages of a tensor we are done with, so
// the resident size stays near one tensor rather than the whole model.
void release_pages(std::span<const uint8_t> bytes) {
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) & ~(page - 1);
    uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) & ~(page - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Converts and quantizes one tensor, a chunk of rows per task.
class TensorQuantizer {
public:
    explicit TensorQuantizer(cpu::ThreadPool& pool) : pool_(pool), scratch_(static_cast<size_t>(pool.size())) {}

    std::span<const uint8_t> run(const TensorInfo& info, std::span<const uint8_t> src, ElementType to,
                                 const float* importance) {
        const int64_t n_per_row = static_cast<int64_t>(info.ne[0]);
        const int64_t rows_per_matrix = static_cast<int64_t>(info.ne[1]);
        const int64_t n_matrices = static_cast<int64_t>(info.ne[2] * info.ne[3]);
        const size_t src_row = *row_size_bytes(info.type, info.ne[0]);
        const size_t dst_row = *row_size_bytes(to, info.ne[0]);
        out_.resize(dst_row * static_cast<size_t>(rows_per_matrix * n_matrices));

        // Chunks of at least 16K values, as llama.cpp uses, and never across matrices
        // (each expert of a 3-D tensor has its own slice of the imatrix).
        const int64_t min_chunk = 32 * 512;
        const int64_t rows_per_chunk = std::max<int64_t>(1, min_chunk / n_per_row);
        const int64_t chunks_per_matrix = (rows_per_matrix + rows_per_chunk - 1) / rows_per_chunk;
        const bool from_f32 = info.type == ElementType::F32;

        pool_.parallel_for(chunks_per_matrix * n_matrices, [&](int64_t task, int thread) {
            const int64_t matrix = task / chunks_per_matrix;
            const int64_t first = (task % chunks_per_matrix) * rows_per_chunk;
            const int64_t n_rows = std::min(rows_per_chunk, rows_per_matrix - first);
            const int64_t row = matrix * rows_per_matrix + first;
            const uint8_t* in = src.data() + static_cast<size_t>(row) * src_row;
            const float* values;
            if (from_f32) {
                values = reinterpret_cast<const float*>(in);
            } else {
                std::vector<float>& buf = scratch_[static_cast<size_t>(thread)];
                buf.resize(static_cast<size_t>(n_rows * n_per_row));
                for (int64_t r = 0; r < n_rows; ++r)
                    quant::dequantize_row(info.type, in + static_cast<size_t>(r) * src_row,
                                          buf.data() + r * n_per_row, n_per_row);
                values = buf.data();
            }
            quant::quantize_rows(to, values, out_.data() + static_cast<size_t>(row) * dst_row, n_rows, n_per_row,
                                 importance ? importance + matrix * n_per_row : nullptr);
        }, 1);
        return out_;
    }

private:
    cpu::ThreadPool& pool_;
    std::vector<std::vector<float>> scratch_;  // per thread: one chunk of rows as f32
    std::vector<uint8_t> out_;
};

}  // namespace

QuantizeSummary quantize_model(const std::string& in_path, const std::string& out_path,
                               const QuantizeOptions& options, const QuantizeProgress& progress) {
    auto file = gguf::File::open(in_path, gguf::LoadMode::Mmap);
    const ModelFacts facts = read_facts(*file);

    MixOptions mix = options.mix;
    mix.has_imatrix = options.imatrix != nullptr;
    // Projector files (mmproj) have no layer structure the mixes know: like
    // llama.cpp's clip quantizer, every quantizable tensor gets the one type.
    if (facts.arch == "clip") mix.pure = true;

    const std::vector<TensorInfo>& tensors = file->tensors();
    const std::vector<TensorPlan> plans = plan_tensor_types(tensors, facts, mix);

    // Check everything that can fail before writing a byte.
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        const ElementType to = plans[i].type;
        if (to == t.type) continue;
        if (!quant::can_quantize(to))
            throw Error("quantize: cannot write tensor '" + t.name + "' as " + std::string(element_type_name(to)));
        if (t.type != ElementType::F32 && !quant::can_dequantize(t.type))
            throw Error("quantize: cannot read tensor '" + t.name + "' of type " + std::string(element_type_name(t.type)));
        if (is_quantized(t.type) && !options.allow_requantize)
            throw Error("quantize: tensor '" + t.name + "' is already quantized (" +
                        std::string(element_type_name(t.type)) +
                        "); requantizing loses quality, pass --allow-requantize to do it anyway");
        if (options.imatrix) {
            auto it = options.imatrix->values.find(t.name);
            const uint64_t want = t.ne[0] * t.ne[2];
            if (it != options.imatrix->values.end() && it->second.size() != want &&
                t.name != "token_embd.weight" && t.name != "per_layer_token_embd.weight")
                throw Error("quantize: imatrix entry for '" + t.name + "' has " + std::to_string(it->second.size()) +
                            " values, the tensor needs " + std::to_string(want));
        }
        if (to == ElementType::Q2_K && mix.file_type == FileType::MOSTLY_Q2_K_S && !options.imatrix &&
            t.name != "token_embd.weight" && t.name != "output.weight")
            throw Error("quantize: Q2_K_S needs an importance matrix (--imatrix); tensor '" + t.name + "' would be Q2_K");
    }

    gguf::Writer writer;
    for (const auto& [key, value] : file->metadata()) {
        if (key == "general.file_type" || key == "general.quantization_version" || key.starts_with("split.")) continue;
        writer.add_metadata(key, value);
    }
    // llama.cpp sets these after copying, which moves them to the end.
    writer.add_metadata("general.quantization_version", Value::u32(2));
    writer.add_metadata("general.file_type", Value::u32(static_cast<uint32_t>(mix.file_type)));
    if (options.imatrix) {
        writer.add_metadata("quantize.imatrix.file", Value::string(options.imatrix_file));
        if (!options.imatrix->datasets.empty())
            writer.add_metadata("quantize.imatrix.dataset", Value::string(options.imatrix->datasets.front()));
        writer.add_metadata("quantize.imatrix.entries_count",
                            Value::u32(static_cast<uint32_t>(options.imatrix->values.size())));
        if (options.imatrix->chunk_count >= 0)
            writer.add_metadata("quantize.imatrix.chunks_count", Value::u32(static_cast<uint32_t>(options.imatrix->chunk_count)));
    }

    cpu::ThreadPool pool(options.n_threads);
    TensorQuantizer quantizer(pool);
    QuantizeSummary summary;
    const std::vector<size_t> order = llama_tensor_order(tensors);
    summary.tensors.resize(order.size());
    std::span<const uint8_t> previous_input;
    const bool mapped = file->load_mode() == gguf::LoadMode::Mmap;

    for (size_t k = 0; k < order.size(); ++k) {
        const size_t i = order[k];
        const TensorInfo& t = tensors[i];
        const ElementType to = plans[i].type;
        TensorReport& report = summary.tensors[k];
        report = {t.name, t.type, to, t.n_bytes, tensor_bytes(to, t), plans[i].note};
        summary.n_elements += t.n_elements();
        summary.bytes_before += report.bytes_before;
        summary.bytes_after += report.bytes_after;
        if (!report.note.empty()) ++summary.n_fallback;

        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        writer.add_tensor(t.name, to, shape, [&, i, k]() -> std::span<const uint8_t> {
            if (mapped && !previous_input.empty()) release_pages(previous_input);
            const TensorInfo& info = tensors[i];
            const std::span<const uint8_t> src = file->tensor_data(info);
            previous_input = src;
            std::span<const uint8_t> result = src;
            if (plans[i].type != info.type) {
                const float* importance = nullptr;
                if (options.imatrix) {
                    auto it = options.imatrix->values.find(info.name);
                    if (it != options.imatrix->values.end() && it->second.size() == info.ne[0] * info.ne[2])
                        importance = it->second.data();
                }
                result = quantizer.run(info, src, plans[i].type, importance);
            }
            if (progress) progress(k + 1, order.size(), summary.tensors[k]);
            return result;
        });
    }
    writer.write(out_path);
    return summary;
}

}  // namespace cria::quantizer
