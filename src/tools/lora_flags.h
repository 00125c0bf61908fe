#pragma once
// The LoRA adapter flags, as llama.cpp spells them: --lora FILE (scale 1)
// and --lora-scaled FILE SCALE, each repeatable, several adapters at once.
// Shared by the commands that run a model on the command line.

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cria/model/lora.h"

namespace cria::tools {

struct LoraFlags {
    std::vector<std::string> files;                          // --lora
    std::vector<std::pair<std::string, float>> scaled_files;  // --lora-scaled
};

inline void add_lora_flags(CLI::App& cmd, LoraFlags* flags) {
    cmd.add_option("--lora", flags->files, "LoRA adapter (GGUF, llama.cpp's format) applied with scale 1; repeatable");
    cmd.add_option("--lora-scaled", flags->scaled_files,
                   "LoRA adapter applied with a user scale: --lora-scaled FILE SCALE; repeatable");
}

// The adapters of the flags, loaded for `model` (kept in `keep`, which must
// outlive the returned set). Throws cria::Error for a file the adapter
// loader refuses.
inline model::LoraSet load_lora_flags(const LoraFlags& flags, const model::Model& model,
                                      std::vector<std::unique_ptr<model::LoraAdapter>>& keep) {
    model::LoraSet set;
    auto add = [&](const std::string& path, float scale) {
        keep.push_back(model::LoraAdapter::load(path, model));
        set.add(*keep.back(), scale);
    };
    for (const auto& f : flags.files) add(f, 1.0f);
    for (const auto& [f, s] : flags.scaled_files) add(f, s);
    return set;
}

}  // namespace cria::tools
