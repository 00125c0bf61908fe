#include "checkpoint.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "cria/core/error.h"

namespace cria::convert {

namespace fs = std::filesystem;

Checkpoint::Checkpoint(const fs::path& dir) {
    std::vector<fs::path> paths;
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(dir / "model.safetensors")) {
        paths.push_back(dir / "model.safetensors");
    } else if (fs::exists(index)) {
        std::ifstream in(index, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw Error("convert: '" + index.string() + "' has no weight_map object");
        std::set<std::string> shards;
        for (const auto& v : j["weight_map"]) {
            if (!v.is_string()) throw Error("convert: '" + index.string() + "': weight_map values must be file names");
            const std::string name = v.get<std::string>();
            if (name.find('/') != std::string::npos || name == "..")
                throw Error("convert: '" + index.string() + "': shard name '" + name + "' is not a plain file name");
            shards.insert(name);
        }
        for (const std::string& s : shards) paths.push_back(dir / s);
    } else {
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".safetensors") paths.push_back(e.path());
        std::sort(paths.begin(), paths.end());
    }
    if (paths.empty()) throw Error("convert: no .safetensors files in '" + dir.string() + "'");
    for (const fs::path& p : paths) {
        files_.push_back(SafetensorsFile::open(p.string()));
        const SafetensorsFile& f = *files_.back();
        for (const StTensor& t : f.tensors())
            if (!tensors_.emplace(t.name, Entry{&f, &t}).second)
                throw Error("convert: tensor '" + t.name + "' appears in more than one shard");
    }
}

const Checkpoint::Entry* Checkpoint::find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace cria::convert
