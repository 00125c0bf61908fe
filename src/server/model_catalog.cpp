// The router's list of models: a directory's GGUF files, llama-server's INI
// presets, and the memory a load is expected to take.
#include "cria/server/model_catalog.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/gguf/file.h"

namespace cria::server {

namespace {

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_names(std::string_view value) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= value.size()) {
        const size_t comma = std::min(value.find(',', start), value.size());
        std::string name = trim(value.substr(start, comma - start));
        if (!name.empty()) out.push_back(std::move(name));
        start = comma + 1;
    }
    return out;
}

int32_t parse_int(const std::string& value, const std::string& where) {
    try {
        size_t used = 0;
        const long v = std::stol(value, &used);
        if (used == value.size() && v >= 0 && v <= INT32_MAX) return static_cast<int32_t>(v);
    } catch (const std::exception&) {
    }
    throw Error(where + ": '" + value + "' is not a non-negative integer");
}

// The options one preset section sets (unset: nullopt-like flags).
struct PresetOptions {
    bool has_path = false, has_aliases = false, has_ctx = false, has_parallel = false;
    std::string path;
    std::vector<std::string> aliases;
    int32_t n_ctx = -1, n_parallel = -1;

    void set(const std::string& key, const std::string& value, const std::string& where) {
        if (key == "model" || key == "m") {
            has_path = true;
            path = value;
        } else if (key == "alias" || key == "a") {
            has_aliases = true;
            aliases = split_names(value);
        } else if (key == "ctx-size" || key == "c") {
            has_ctx = true;
            n_ctx = parse_int(value, where);
        } else if (key == "parallel" || key == "np") {
            has_parallel = true;
            n_parallel = parse_int(value, where);
            if (n_parallel < 1 || n_parallel > 64) throw Error(where + ": parallel must be 1..64");
        } else {
            throw Error(where + ": option '" + key +
                        "' is not supported in a cria models preset (supported: model, alias, ctx-size, parallel)");
        }
    }
    void apply_to(ModelEntry& e) const {
        if (has_path) e.path = path;
        if (has_aliases) e.aliases = aliases;
        if (has_ctx) e.n_ctx = n_ctx;
        if (has_parallel) e.n_parallel = n_parallel;
    }
};

// A projector or an adapter is no model to serve.
bool is_servable_model(const std::filesystem::path& p) {
    try {
        const auto file = gguf::File::open(p.string(), gguf::LoadMode::Mmap);
        const std::string type = file->get_string("general.type", "model");
        return type != "mmproj" && type != "adapter" && !file->find("clip.projector_type");
    } catch (const Error&) {
        return true;  // listed; loading it will say what is wrong with it
    }
}

}  // namespace

bool ModelEntry::answers_to(std::string_view requested) const {
    if (requested.empty()) return false;
    if (requested == name) return true;
    if (std::find(aliases.begin(), aliases.end(), requested) != aliases.end()) return true;
    const std::filesystem::path p(path);
    return requested == p.filename().string() || requested == p.stem().string();
}

std::vector<ModelEntry> scan_models_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) throw Error("--models-dir: cannot read '" + dir + "': " + ec.message());
    std::vector<ModelEntry> out;
    for (const auto& f : it) {
        const auto& p = f.path();
        if (p.extension() != ".gguf" || !f.is_regular_file(ec)) continue;
        if (!is_servable_model(p)) continue;
        ModelEntry e;
        e.name = p.stem().string();
        e.path = p.string();
        out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
    return out;
}

void apply_models_preset_text(std::string_view text, const std::string& name, std::vector<ModelEntry>& models) {
    PresetOptions global;
    std::map<std::string, PresetOptions> sections;
    std::vector<std::string> order;
    std::string section;  // "" before the first section: global, as [*]
    std::istringstream in{std::string(text)};
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        const std::string where = name + ":" + std::to_string(line_no);
        const std::string t = trim(line);
        if (t.empty() || t[0] == ';' || t[0] == '#') continue;
        if (t[0] == '[') {
            if (t.back() != ']' || t.size() < 3) throw Error(where + ": a section is [NAME]");
            section = trim(std::string_view(t).substr(1, t.size() - 2));
            if (section.empty()) throw Error(where + ": empty section name");
            if (section != "*" && !sections.count(section)) {
                sections[section] = {};
                order.push_back(section);
            }
            continue;
        }
        const auto eq = t.find('=');
        if (eq == std::string::npos) throw Error(where + ": expected KEY = VALUE");
        std::string key = trim(std::string_view(t).substr(0, eq));
        std::string value = trim(std::string_view(t).substr(eq + 1));
        while (!key.empty() && key[0] == '-') key.erase(0, 1);  // "--ctx-size" as "ctx-size"
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        if (key == "version") continue;
        if (section.empty() || section == "*") global.set(key, value, where);
        else sections[section].set(key, value, where);
    }
    // Defaults first, then each section's own options.
    for (auto& e : models) {
        global.apply_to(e);
        if (auto s = sections.find(e.name); s != sections.end()) s->second.apply_to(e);
    }
    for (const auto& sname : order) {
        const bool known = std::any_of(models.begin(), models.end(), [&](const ModelEntry& e) { return e.name == sname; });
        if (known) continue;
        ModelEntry e;
        e.name = sname;
        global.apply_to(e);
        sections[sname].apply_to(e);
        if (e.path.empty()) throw Error(name + ": model [" + sname + "] has no 'model' (the GGUF file's path)");
        models.push_back(std::move(e));
    }
}

// The JSON form is the INI file's sections as an object: {"*": {...},
// "NAME": {"model": "...", "alias": "a,b" or ["a", "b"], "ctx-size": 1024}}.
// It is turned into the INI text, so both forms follow the same rules.
static std::string preset_json_to_ini(std::string_view text, const std::string& name) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error(name + ": not a JSON object of model sections");
    std::string ini;
    for (const auto& [section, options] : j.items()) {
        if (section == "version") continue;
        if (!options.is_object()) throw Error(name + ": section '" + section + "' must be an object of options");
        if (section.find_first_of("[]\n") != std::string::npos) throw Error(name + ": bad section name '" + section + "'");
        ini.append("[").append(section).append("]\n");
        for (const auto& [key, value] : options.items()) {
            std::string v;
            if (value.is_string()) v = value.get<std::string>();
            else if (value.is_number_integer()) v = std::to_string(value.get<int64_t>());
            else if (value.is_array()) {
                for (const auto& a : value) {
                    if (!a.is_string()) throw Error(name + ": [" + section + "] " + key + ": a list must hold strings");
                    if (!v.empty()) v += ',';
                    v += a.get<std::string>();
                }
            } else {
                throw Error(name + ": [" + section + "] " + key + ": a value must be a string, an integer or a list of strings");
            }
            if (key.find_first_of("=\n") != std::string::npos || v.find('\n') != std::string::npos)
                throw Error(name + ": [" + section + "] bad option '" + key + "'");
            ini.append(key).append(" = ").append(v).append("\n");
        }
    }
    return ini;
}

void apply_models_preset(const std::string& path, std::vector<ModelEntry>& models) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("--models-preset: cannot open '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
        apply_models_preset_text(preset_json_to_ini(text, path), path + " (JSON, as INI)", models);
        return;
    }
    apply_models_preset_text(text, path, models);
}

void check_model_names(const std::vector<ModelEntry>& models) {
    std::map<std::string, std::string> owner;
    for (const auto& e : models) {
        std::vector<std::string> names{e.name};
        names.insert(names.end(), e.aliases.begin(), e.aliases.end());
        for (const auto& n : names) {
            auto [it, fresh] = owner.emplace(n, e.name);
            if (!fresh && it->second != e.name)
                throw Error("the model name '" + n + "' names both '" + it->second + "' and '" + e.name + "'");
        }
    }
}

uint64_t estimate_model_bytes(const ModelEntry& model, int32_t n_ctx, int32_t n_parallel) {
    std::error_code ec;
    const uint64_t file_bytes = std::filesystem::file_size(model.path, ec);
    if (ec) return 0;  // loading will say what is wrong
    try {
        const auto f = gguf::File::open(model.path, gguf::LoadMode::Mmap);
        const uint64_t layers = f->get_u32(f->arch_key("block_count"), 0);
        const uint64_t embd = f->get_u32(f->arch_key("embedding_length"), 0);
        const uint64_t heads = f->get_u32(f->arch_key("attention.head_count"), 0);
        const uint64_t heads_kv = f->get_u32(f->arch_key("attention.head_count_kv"), static_cast<uint32_t>(heads));
        const uint64_t head_k = f->get_u32(f->arch_key("attention.key_length"), heads ? static_cast<uint32_t>(embd / heads) : 0);
        const uint64_t head_v = f->get_u32(f->arch_key("attention.value_length"), static_cast<uint32_t>(head_k));
        uint64_t cells = n_ctx > 0 ? static_cast<uint64_t>(n_ctx) : 0;
        if (cells == 0) cells = uint64_t{f->get_u32(f->arch_key("context_length"), 0)} * static_cast<uint64_t>(std::max(1, n_parallel));
        const uint64_t kv_bytes = layers * cells * heads_kv * (head_k + head_v) * 2;  // f16 cells
        return file_bytes + kv_bytes;
    } catch (const Error&) {
        return file_bytes;  // per-layer head counts and the like: the file's size alone
    }
}

uint64_t available_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream fields(line.substr(13));
        uint64_t kib = 0;
        if (fields >> kib) return kib * 1024;
    }
    return UINT64_MAX;
}

}  // namespace cria::server
