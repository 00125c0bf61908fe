#pragma once
// Which type each tensor of a model becomes when quantizing to a file type.
//
// This reproduces llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) so
// that `cria quantize` and `llama-quantize` choose the same type for every
// tensor: norms, 1-D tensors, position embeddings and a few other small or
// sensitive tensors are never quantized; the _S/_M/_L mixes give more bits to
// attn_v, ffn_down, attn_output and the output/token embedding depending on the
// layer index (use_more_bits); --pure, --output-tensor-type,
// --token-embedding-type and --tensor-type override; and a tensor whose rows
// are not a whole number of blocks falls back to a type that fits.
//
// Mixtures of experts: stacked expert tensors (ffn_*_exps, 3-D) and shared
// experts (ffn_*_shexp) take the ffn_gate/up/down rules with the layer read
// from their name; the router (ffn_gate_inp) is never quantized; exactly 8
// experts (Mixtral) bump attn_v/attn_k to q8_0 and, in the 2-4 bit mixes,
// attn_output to q5_K; the MXFP4_MOE file type makes 3-D expert tensors MXFP4
// and the rest q8_0 (on bailingmoe3 only the expert FFN roles: its MLA
// projections are 3-D too).

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/gguf/tensor_info.h"
#include "cria/quantizer/file_type.h"

namespace cria::quantizer {

// The model facts the rules depend on.
struct ModelFacts {
    std::string arch;       // general.architecture ("llama", "clip", ...)
    uint32_t n_layer = 0;   // <arch>.block_count
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_expert = 0;  // <arch>.expert_count (0: dense)
    uint32_t n_gqa() const { return n_head_kv == 0 ? 0 : n_head / n_head_kv; }
};

struct TypeOverride {
    std::string pattern;  // ECMAScript regex, searched in the tensor name
    ElementType type;
};

struct MixOptions {
    FileType file_type = FileType::MOSTLY_Q8_0;
    bool pure = false;                    // every quantizable tensor gets the default type
    bool quantize_output_tensor = true;   // false: --leave-output-tensor
    bool has_imatrix = false;             // some rules differ when an imatrix is given
    std::optional<ElementType> output_tensor_type;
    std::optional<ElementType> token_embedding_type;
    std::vector<TypeOverride> overrides;  // first match wins
};

struct TensorPlan {
    ElementType type;     // what the tensor becomes (its own type when kept)
    bool quantizable;     // false: copied as is (norms, 1-D, ...)
    std::string note;     // non-empty when a fallback was needed (why)
};

// Whether llama.cpp would ever quantize this tensor (llama-quant.cpp's
// tensor_allows_quantization): 2-D/3-D weights that are not norms, gates of
// experts, position embeddings, ...
bool tensor_allows_quantization(const gguf::TensorInfo& tensor, bool quantize_output_tensor);

// llama.cpp visits tensors sorted by layer, then by name; the per-layer
// counters of the mix rules follow that order. Returns indices into `tensors`.
std::vector<size_t> llama_tensor_order(const std::vector<gguf::TensorInfo>& tensors);

// Plans every tensor, in the order of `tensors`. Throws cria::Error when a
// --tensor-type pattern is not a valid regex.
std::vector<TensorPlan> plan_tensor_types(const std::vector<gguf::TensorInfo>& tensors, const ModelFacts& facts,
                                          const MixOptions& options);

}  // namespace cria::quantizer
