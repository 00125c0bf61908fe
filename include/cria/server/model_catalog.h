#pragma once
// The models a router serves (`cria serve --models-dir DIR` and/or
// `--models-preset FILE`): their names, files and per-model options, and
// what loading one would cost in memory.
//
// --models-dir lists every *.gguf directly in DIR (no recursion) but
// projectors and LoRA adapters (general.type "mmproj" / "adapter"); a model
// is named by its file name without ".gguf".
//
// --models-preset reads llama-server's INI preset format: one [NAME]
// section per model with llama-server's long option names as keys; a [*]
// section (or keys before the first section) sets defaults for every
// model. Keys taken: model (path, as written: relative to the working
// directory, as llama-server), alias (comma-separated), ctx-size / c,
// parallel / np, and version (ignored). Any other key is an error naming it.
// A section named like a --models-dir model sets that model's options.
// A preset file whose text starts with '{' is the same as JSON (cria's
// form; llama-server reads INI only): {"*": {...}, "NAME": {"model": PATH,
// "alias": "a,b" or ["a", "b"], "ctx-size": 1024}}.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cria::server {

struct ModelEntry {
    std::string name;                  // what a request's "model" names (also: file name, stem, aliases)
    std::string path;                  // the GGUF file
    std::vector<std::string> aliases;  // more names for it
    int32_t n_ctx = -1;                // -c for this model (-1: the server's)
    int32_t n_parallel = -1;           // -np for this model (-1: the server's)

    // True when `requested` names this model: its name, an alias, the file's name or its stem.
    bool answers_to(std::string_view requested) const;
};

// Every model of DIR (sorted by name). Throws cria::Error when DIR cannot be read.
std::vector<ModelEntry> scan_models_dir(const std::string& dir);

// The preset file's models (INI, or JSON: see above) merged into `models` (a section naming one of
// them overrides its options; others are added and need a `model` key).
// Throws cria::Error naming the file, line and key at fault.
void apply_models_preset(const std::string& path, std::vector<ModelEntry>& models);
// The same from the text of a preset file (`name` for messages).
void apply_models_preset_text(std::string_view text, const std::string& name, std::vector<ModelEntry>& models);

// Names must not collide (a name or alias naming two models); throws cria::Error.
void check_model_names(const std::vector<ModelEntry>& models);

// Bytes loading the model is expected to take: the file's size plus its
// KV cache for n_ctx cells (read from the GGUF header: layers, KV width;
// n_ctx 0: the training context times n_parallel). An estimate, used to
// refuse a load that would not fit.
uint64_t estimate_model_bytes(const ModelEntry& model, int32_t n_ctx, int32_t n_parallel);

// MemAvailable from /proc/meminfo in bytes (UINT64_MAX when it cannot be read).
uint64_t available_memory_bytes();

}  // namespace cria::server
