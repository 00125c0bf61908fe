#pragma once
// The files of the README's speed table, made as llama.cpp's are: random
// weights with the real shapes written in F16 (as ../tools/mkmodel.py does),
// then quantized with llama-quantize's type mix (cria quantize follows
// llama_tensor_get_type). So the tied token embedding becomes Q6_K in the
// Q4_0 and Q4_K_M files, as in llama.cpp's, and both engines read the same
// bytes. Writing each quantized type directly would put the embedding in the
// weight type: a smaller, different file.

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cria/model/synthetic_model.h"
#include "cria/quantizer/quantize_model.h"

namespace cria::bench {

struct SpeedModel {
    const char* name;                   // file written into the directory
    const char* source;                 // the F16 file it is quantized from
    quantizer::FileType type;           // MOSTLY_F16: the source itself
};

inline const std::vector<SpeedModel>& speed_models() {
    static const std::vector<SpeedModel> models = {
        {"llama-1b-f16.gguf", "llama-1b-f16.gguf", quantizer::FileType::MOSTLY_F16},
        {"llama-1b-q4_0.gguf", "llama-1b-f16.gguf", quantizer::FileType::MOSTLY_Q4_0},
        {"llama-1b-q8_0.gguf", "llama-1b-f16.gguf", quantizer::FileType::MOSTLY_Q8_0},
        {"llama-1b-q4_k_m.gguf", "llama-1b-f16.gguf", quantizer::FileType::MOSTLY_Q4_K_M},
        {"qwen3-0.6b-q4_0.gguf", "qwen3-0.6b-f16.gguf", quantizer::FileType::MOSTLY_Q4_0},
        {"qwen35-hybrid-q4_0.gguf", "qwen35-hybrid-f16.gguf", quantizer::FileType::MOSTLY_Q4_0},
    };
    return models;
}

// Writes the F16 source `name` into `dir` unless it is already there.
inline void write_speed_source(const std::filesystem::path& dir, const std::string& name) {
    const std::filesystem::path path = dir / name;
    if (std::filesystem::exists(path)) return;
    const auto spec = name.rfind("qwen35", 0) == 0 ? model::SyntheticModelSpec::qwen35_hybrid(ElementType::F16)
                      : name.rfind("qwen3", 0) == 0 ? model::SyntheticModelSpec::qwen3_0_6b(ElementType::F16)
                                                     : model::SyntheticModelSpec::llama_1b(ElementType::F16);
    std::fprintf(stderr, "writing %s\n", path.string().c_str());
    model::write_synthetic_model(spec, path.string());
}

// Makes the models named in `wanted` (all when empty) in `dir`. An F16
// source that is not itself one of the wanted files is removed afterwards.
inline void make_speed_models(const std::filesystem::path& dir, const std::vector<std::string>& wanted, int n_threads) {
    const auto is_wanted = [&](const std::string& name) {
        if (wanted.empty()) return true;
        for (const auto& w : wanted)
            if (w == name) return true;
        return false;
    };
    std::vector<std::string> scratch;  // sources written only to be quantized
    for (const auto& m : speed_models()) {
        if (!is_wanted(m.name)) continue;
        write_speed_source(dir, m.source);
        bool source_is_an_output = false;
        for (const auto& other : speed_models())
            source_is_an_output = source_is_an_output || (other.name == std::string(m.source) && is_wanted(other.name));
        if (!source_is_an_output) scratch.push_back(m.source);
        if (m.type == quantizer::FileType::MOSTLY_F16) continue;
        const std::filesystem::path out = dir / m.name;
        std::fprintf(stderr, "quantizing %s\n", out.string().c_str());
        quantizer::QuantizeOptions q;
        q.mix.file_type = m.type;
        q.n_threads = n_threads;
        const auto summary = quantizer::quantize_model((dir / m.source).string(), out.string(), q);
        for (const auto& t : summary.tensors)
            if (t.name == "token_embd.weight")
                std::fprintf(stderr, "  token_embd.weight: %s\n", std::string(element_type_name(t.to)).c_str());
    }
    for (const auto& s : scratch) std::filesystem::remove(dir / s);
}

}  // namespace cria::bench
