#pragma once
// Converting a Hugging Face checkpoint directory to one GGUF file, without
// Python: what llama.cpp's convert_hf_to_gguf.py does for the architectures
// listed below, with the same tensor names, transforms and metadata keys.
//
// Reads config.json, model.safetensors or the shards listed in
// model.safetensors.index.json, tokenizer.json (byte-level BPE) or
// tokenizer.model (SentencePiece), tokenizer_config.json (chat template,
// special tokens, add_bos/add_eos), generation_config.json (fallback ids).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cria/core/element_type.h"

namespace cria::convert {

struct ConvertOptions {
    ElementType outtype = ElementType::F16;  // F32, F16, BF16 or Q8_0
    std::string name;                        // general.name; empty: from the directory
};

struct ConvertSummary {
    std::string hf_architecture;  // "LlamaForCausalLM"
    std::string gguf_architecture;
    uint64_t n_tensors = 0;
    uint64_t n_parameters = 0;
    uint64_t bytes_written = 0;
};

// Hugging Face class names that convert() accepts.
const std::vector<std::string>& supported_architectures();

// Called once per tensor written: (done, total, GGUF name).
using ConvertProgress = std::function<void(size_t, size_t, const std::string&)>;

// Converts `dir` to `out_path`. Throws cria::Error for a missing or malformed
// input file, an unsupported architecture (the message lists the supported
// ones), an unknown tokenizer, or a failed write.
ConvertSummary convert(const std::filesystem::path& dir, const std::string& out_path, const ConvertOptions& options,
                       const ConvertProgress& progress = {});

// "7.3M", "1.2B": gguf-py's size label for a parameter count.
std::string size_label(uint64_t n_parameters);

}  // namespace cria::convert
