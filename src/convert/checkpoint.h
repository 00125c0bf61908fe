#pragma once
// The tensors of a Hugging Face checkpoint directory, from one or many
// .safetensors files, looked up by their Hugging Face name.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cria/convert/safetensors.h"

namespace cria::convert {

class Checkpoint {
public:
    // Opens model.safetensors, or the shards named by model.safetensors.index.json,
    // or else every *.safetensors in `dir`. Throws cria::Error when none exists, a
    // shard is missing, or a tensor name appears twice.
    explicit Checkpoint(const std::filesystem::path& dir);

    struct Entry {
        const SafetensorsFile* file;
        const StTensor* tensor;
    };
    // Every tensor, by name.
    const std::map<std::string, Entry>& tensors() const { return tensors_; }
    const Entry* find(const std::string& name) const;

private:
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, Entry> tensors_;
};

}  // namespace cria::convert
