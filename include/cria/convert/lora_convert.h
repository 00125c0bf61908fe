#pragma once
// Converting a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors)
// to llama.cpp's adapter GGUF, what convert_lora_to_gguf.py does: metadata
// general.type = "adapter", adapter.type = "lora", adapter.lora.alpha (from
// lora_alpha), general.architecture (the base's); for each adapted linear
// layer the base GGUF's matrix name with ".lora_a" [n_in, rank] and ".lora_b"
// [rank, n_out] (ggml order: PEFT's lora_A.weight [rank, in] and
// lora_B.weight [out, rank] as they are). For a llama base the rows of the
// query and key B matrices are reordered as the converter reorders the
// weights' rows (rope_permute.h).
//
// The base GGUF gives the architecture, the heads, and the shapes every pair
// must fit. Adapted modules: q/k/v/o_proj, gate/up/down_proj of each layer,
// and lm_head. Refused with a cria::Error naming the cause: a missing or
// malformed adapter_config.json or safetensors file, another PEFT type,
// DoRA, per-module ranks or alphas (rank_pattern, alpha_pattern), a target
// module without a GGUF counterpart, a tensor of another rank than r, a pair
// missing a half, a shape that does not fit the base.

#include <cstdint>
#include <filesystem>
#include <string>

#include "cria/core/element_type.h"

namespace cria::convert {

struct LoraConvertOptions {
    ElementType outtype = ElementType::F16;  // F32, F16 or BF16 (the adapter's tensors)
};

struct LoraConvertSummary {
    std::string architecture;
    uint32_t rank = 0;
    float alpha = 0;
    uint64_t n_pairs = 0;
    uint64_t bytes_written = 0;
};

LoraConvertSummary convert_lora(const std::filesystem::path& adapter_dir, const std::string& base_gguf,
                                const std::string& out_path, const LoraConvertOptions& options);

}  // namespace cria::convert
