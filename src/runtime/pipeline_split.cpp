// Cutting a model's layers into pipeline stages (cria/runtime/pipeline_split.h).

#include "cria/runtime/pipeline_split.h"

#include <charconv>
#include <cmath>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/hparams.h"

namespace cria::runtime {
namespace {

// The layer a tensor belongs to ("blk.12.attn_q.weight" -> 12), or -1.
int64_t layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    uint32_t layer = 0;
    const char* first = name.data() + 4;
    const auto [end, ec] = std::from_chars(first, name.data() + name.size(), layer);
    if (ec != std::errc() || end == first || *end != '.') return -1;
    return layer;
}

// Bytes per layer, and the output head's bytes (output.weight, or the tied embedding).
std::vector<uint64_t> layer_bytes(const gguf::File& file, uint32_t n_layer, uint64_t& head) {
    std::vector<uint64_t> bytes(n_layer, 0);
    head = 0;
    for (const auto& t : file.tensors()) {
        const int64_t l = layer_of(t.name);
        if (l >= 0 && l < n_layer) bytes[static_cast<size_t>(l)] += t.n_bytes;
    }
    const auto* output = file.find_tensor("output.weight");
    if (output == nullptr) output = file.find_tensor("token_embd.weight");
    if (output != nullptr) head = output->n_bytes;
    return bytes;
}

}  // namespace

std::vector<uint64_t> stage_bytes(const gguf::File& file, const std::vector<model::LayerRange>& ranges) {
    const model::HParams hp = model::read_hparams(file);
    uint64_t head = 0;
    const std::vector<uint64_t> bytes = layer_bytes(file, hp.n_layer, head);
    std::vector<uint64_t> out;
    for (const model::LayerRange& r : ranges) {
        uint64_t sum = 0;
        for (uint32_t l = r.begin; l < r.end && l < hp.n_layer; ++l) sum += bytes[l];
        if (r.end >= hp.n_layer) sum += head;
        out.push_back(sum);
    }
    return out;
}

std::vector<model::LayerRange> split_layers_by_bytes(const gguf::File& file, uint32_t n_stages) {
    const model::HParams hp = model::read_hparams(file);
    if (n_stages == 0 || n_stages > hp.n_layer)
        throw Error("pipeline: " + std::to_string(n_stages) + " stages cannot share the model's " +
                    std::to_string(hp.n_layer) + " layers (each stage needs at least one)");
    uint64_t head = 0;
    const std::vector<uint64_t> bytes = layer_bytes(file, hp.n_layer, head);
    uint64_t total = head;
    for (uint64_t b : bytes) total += b;
    // Stage s ends at the layer boundary nearest to (s + 1) / n of the bytes
    // (the output head counted after the last layer), leaving at least one
    // layer for each later stage.
    std::vector<model::LayerRange> ranges;
    uint32_t begin = 0;
    uint64_t before = 0;  // bytes of layers [0, begin)
    for (uint32_t s = 0; s + 1 < n_stages; ++s) {
        const double target = static_cast<double>(total) * (s + 1) / n_stages;
        uint32_t end = begin + 1;
        uint64_t upto = before + bytes[begin];
        const uint32_t last_end = hp.n_layer - (n_stages - s - 1);
        while (end < last_end &&
               std::fabs(static_cast<double>(upto + bytes[end]) - target) <= std::fabs(static_cast<double>(upto) - target)) {
            upto += bytes[end];
            ++end;
        }
        ranges.push_back({begin, end});
        begin = end;
        before = upto;
    }
    ranges.push_back({begin, hp.n_layer});
    return ranges;
}

std::vector<model::LayerRange> parse_layer_split(const std::string& text, uint32_t n_layer, uint32_t n_stages) {
    std::vector<model::LayerRange> ranges;
    uint32_t begin = 0;
    size_t i = 0;
    while (i <= text.size()) {
        uint32_t count = 0;
        const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), count);
        if (ec != std::errc() || count == 0)
            throw Error("--layer-split: expected a positive layer count at offset " + std::to_string(i) + " of '" + text + "'");
        if (count > n_layer - begin)
            throw Error("--layer-split '" + text + "' asks for more than the model's " + std::to_string(n_layer) + " layers");
        ranges.push_back({begin, begin + count});
        begin += count;
        i = static_cast<size_t>(end - text.data());
        if (i == text.size()) break;
        if (text[i] != ',') throw Error("--layer-split: expected ',' at offset " + std::to_string(i) + " of '" + text + "'");
        ++i;
    }
    if (ranges.size() != n_stages)
        throw Error("--layer-split '" + text + "' lists " + std::to_string(ranges.size()) + " stages; there are " +
                    std::to_string(n_stages) + " processes");
    if (begin != n_layer)
        throw Error("--layer-split '" + text + "' covers " + std::to_string(begin) + " layers; the model has " +
                    std::to_string(n_layer));
    return ranges;
}

}  // namespace cria::runtime
