// `cria inspect FILE`: what is inside a GGUF file — version, metadata, the
// tensor table and totals — as text or as one JSON document.

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/vision/mmproj.h"
#include "tools/command.h"

namespace cria::tools {
namespace {

using gguf::File;
using gguf::TensorInfo;
using gguf::Value;
using gguf::ValueType;
// Keys stay in the order written, so the document reads like the text output.
using json = nlohmann::ordered_json;

std::string type_label(const Value& v) {
    if (!v.is_array()) return std::string(gguf::value_type_name(v.type()));
    return "array[" + std::string(gguf::value_type_name(v.array_type())) + "]";
}

std::string shape_text(const TensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

// A metadata value as JSON; arrays are cut to their first `max_items` items
// and carry their full length.
json value_json(const Value& v, size_t max_items) {
    switch (v.type()) {
        case ValueType::STRING: return *v.as_string();
        case ValueType::BOOL: return *v.as_bool();
        case ValueType::F32: case ValueType::F64: return *v.as_f64();
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64: return *v.as_i64();
        case ValueType::ARRAY: {
            json items = json::array();
            for (size_t i = 0; i < v.size() && i < max_items; ++i) items.push_back(value_json(v.at(i), max_items));
            return {{"element_type", gguf::value_type_name(v.array_type())},
                    {"length", v.size()},
                    {"items", items},
                    {"truncated", v.size() > max_items}};
        }
        default: return *v.as_u64();
    }
}

struct Totals {
    uint64_t parameters = 0;
    uint64_t bytes = 0;
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;  // name -> (tensors, bytes)
};

Totals totals_of(const File& file) {
    Totals t;
    for (const TensorInfo& info : file.tensors()) {
        t.parameters += info.n_elements();
        t.bytes += info.n_bytes;
        auto& [count, bytes] = t.by_type[std::string(element_type_name(info.type))];
        ++count;
        bytes += info.n_bytes;
    }
    return t;
}

// For a vision projector (mmproj) file, what cria reads from it, or why it
// cannot use it: inspecting never fails on a projector cria refuses.
std::vector<std::string> mmproj_summary(const File& file) {
    try {
        return vision::Mmproj::from_file(file)->describe();
    } catch (const Error& e) {
        return {std::string("not usable by cria: ") + e.what()};
    }
}

void print_text(const File& file, size_t max_items, size_t max_chars) {
    std::printf("file: %s\n", file.path().c_str());
    std::printf("GGUF version %u, alignment %llu, data section at byte %llu, file size %llu bytes, loaded with %s\n",
                file.version(), static_cast<unsigned long long>(file.alignment()),
                static_cast<unsigned long long>(file.data_offset()), static_cast<unsigned long long>(file.file_size()),
                std::string(gguf::load_mode_name(file.load_mode())).c_str());
    std::printf("\nmetadata: %zu keys\n", file.metadata().size());
    size_t key_width = 0;
    for (const auto& kv : file.metadata()) key_width = std::max(key_width, kv.first.size());
    for (const auto& [key, value] : file.metadata()) {
        std::printf("  %-*s  %-14s %s\n", static_cast<int>(key_width), key.c_str(), type_label(value).c_str(),
                    value.to_display_string(max_items, max_chars).c_str());
    }
    std::printf("\ntensors: %zu\n", file.tensors().size());
    size_t name_width = 4;
    for (const TensorInfo& t : file.tensors()) name_width = std::max(name_width, t.name.size());
    std::printf("  %5s  %-*s  %-8s %-28s %14s %14s\n", "#", static_cast<int>(name_width), "name", "type", "shape",
                "bytes", "offset");
    size_t i = 0;
    for (const TensorInfo& t : file.tensors()) {
        std::printf("  %5zu  %-*s  %-8s %-28s %14llu %14llu\n", i++, static_cast<int>(name_width), t.name.c_str(),
                    std::string(element_type_name(t.type)).c_str(), shape_text(t).c_str(),
                    static_cast<unsigned long long>(t.n_bytes), static_cast<unsigned long long>(t.offset));
    }
    const Totals totals = totals_of(file);
    std::printf("\ntotals: %llu parameters, %llu bytes of tensor data\n",
                static_cast<unsigned long long>(totals.parameters), static_cast<unsigned long long>(totals.bytes));
    for (const auto& [type, cb] : totals.by_type) {
        std::printf("  %-8s %6llu tensors %14llu bytes\n", type.c_str(), static_cast<unsigned long long>(cb.first),
                    static_cast<unsigned long long>(cb.second));
    }
}

void print_json(const File& file, size_t max_items) {
    json doc;
    doc["file"] = file.path();
    doc["version"] = file.version();
    doc["alignment"] = file.alignment();
    doc["data_offset"] = file.data_offset();
    doc["file_size"] = file.file_size();
    doc["load_mode"] = gguf::load_mode_name(file.load_mode());
    json meta = json::array();
    for (const auto& [key, value] : file.metadata()) {
        meta.push_back({{"key", key}, {"type", type_label(value)}, {"value", value_json(value, max_items)}});
    }
    doc["metadata"] = meta;
    json tensors = json::array();
    for (const TensorInfo& t : file.tensors()) {
        tensors.push_back({{"name", t.name},
                           {"type", element_type_name(t.type)},
                           {"shape", std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                           {"bytes", t.n_bytes},
                           {"offset", t.offset}});
    }
    doc["tensors"] = tensors;
    const Totals totals = totals_of(file);
    json by_type = json::object();
    for (const auto& [type, cb] : totals.by_type) by_type[type] = {{"tensors", cb.first}, {"bytes", cb.second}};
    doc["totals"] = {{"parameters", totals.parameters}, {"bytes", totals.bytes}, {"by_type", by_type}};
    if (vision::is_mmproj(file)) doc["mmproj"] = mmproj_summary(file);
    // Strings from the file need not be UTF-8: replace bad bytes rather than fail.
    std::puts(doc.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

// Prints read progress of non-mmap loads to stderr, once per percent.
gguf::ProgressCallback stderr_progress() {
    auto last = std::make_shared<int>(-1);
    return [last](uint64_t done, uint64_t total) {
        const int pct = total ? static_cast<int>(done * 100 / total) : 100;
        if (pct == *last) return;
        *last = pct;
        std::fprintf(stderr, "\rloading tensor data: %3d%% (%llu / %llu MiB)%s", pct,
                     static_cast<unsigned long long>(done >> 20), static_cast<unsigned long long>(total >> 20),
                     done >= total ? "\n" : "");
    };
}

std::function<int()> setup(CLI::App& cmd) {
    struct Options {
        std::string path;
        bool json = false;
        bool timing = false;
        std::string load_mode = "auto";
        size_t max_items = 8;
        size_t max_chars = 120;
    };
    auto opt = std::make_shared<Options>();
    cmd.add_option("file", opt->path, "GGUF file to inspect")->required();
    cmd.add_flag("--json", opt->json, "Print one JSON document instead of text");
    cmd.add_option("--load-mode", opt->load_mode, "auto, none, mmap, mlock, mmap+mlock or dio")
        ->capture_default_str();
    cmd.add_option("--max-items", opt->max_items, "Array items shown before abbreviating")->capture_default_str();
    cmd.add_option("--max-chars", opt->max_chars, "String bytes shown in text output before cutting (0: all)")
        ->capture_default_str();
    cmd.add_flag("--timing", opt->timing, "Print how long opening the file took to stderr");
    return [opt]() -> int {
        const auto mode = gguf::parse_load_mode(opt->load_mode);
        if (!mode) throw Error("unknown load mode '" + opt->load_mode + "' (auto, none, mmap, mlock, mmap+mlock, dio)");
        const auto start = std::chrono::steady_clock::now();
        auto file = File::open(opt->path, *mode, stderr_progress());
        const auto elapsed = std::chrono::steady_clock::now() - start;
        if (opt->timing) {
            std::fprintf(stderr, "open: %.3f ms\n", std::chrono::duration<double, std::milli>(elapsed).count());
        }
        for (const std::string& w : file->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
        if (opt->json) {
            print_json(*file, opt->max_items);
        } else {
            print_text(*file, opt->max_items, opt->max_chars);
            if (vision::is_mmproj(*file)) {
                std::printf("\nvision projector (mmproj):\n");
                for (const std::string& line : mmproj_summary(*file)) std::printf("  %s\n", line.c_str());
            }
        }
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(inspect, "inspect", "Show the metadata and tensors of a GGUF file", setup);

}  // namespace cria::tools
