#pragma once
// How a model's layers are cut into contiguous ranges, one per pipeline
// stage (cria/runtime/pipeline.h): by weight bytes (each stage holds about
// the same share of the file), or as the user lists them (--layer-split
// 10,14: layers per stage, in stage order).

#include <cstdint>
#include <string>
#include <vector>

#include "cria/model/model.h"

namespace cria::gguf {
class File;
}

namespace cria::runtime {

// The bytes each stage would hold: the tensors of its layers ("blk.N.*"),
// and on the last stage the output matrix (the embedding when it is tied).
std::vector<uint64_t> stage_bytes(const gguf::File& file, const std::vector<model::LayerRange>& ranges);

// n_stages ranges of at least one layer each whose weight bytes are as even
// as the layer boundaries allow. Throws cria::Error when the model has fewer
// layers than stages.
std::vector<model::LayerRange> split_layers_by_bytes(const gguf::File& file, uint32_t n_stages);

// "10,14": the number of layers of each stage. Throws cria::Error unless
// there is one positive count per stage and they add up to n_layer.
std::vector<model::LayerRange> parse_layer_split(const std::string& text, uint32_t n_layer, uint32_t n_stages);

}  // namespace cria::runtime
