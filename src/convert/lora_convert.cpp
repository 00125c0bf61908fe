// PEFT LoRA adapter -> llama.cpp adapter GGUF (see lora_convert.h).

#include "cria/convert/lora_convert.h"

#include <filesystem>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <vector>

#include "cria/convert/safetensors.h"
#include "cria/core/error.h"
#include "cria/core/float16.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "rope_permute.h"

namespace cria::convert {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Error fail(const std::string& why) { return Error("convert --lora: " + why); }

// PEFT module names of the layers -> the base GGUF's names (convert.cpp's
// block roles, the linear ones).
const std::map<std::string, std::string>& layer_modules() {
    static const std::map<std::string, std::string> m = {
        {"self_attn.q_proj", "attn_q"},   {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
    };
    return m;
}

// A target_modules entry is the module's last name ("q_proj") or a longer suffix.
bool known_target(const std::string& target) {
    if (target == "lm_head") return true;
    for (const auto& [module, gguf] : layer_modules())
        if (module == target || module.ends_with("." + target)) return true;
    return false;
}

struct Config {
    uint32_t rank = 0;
    float alpha = 0;
};

Config read_config(const fs::path& dir) {
    const fs::path path = dir / "adapter_config.json";
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw fail("'" + dir.string() +
                   "' has no adapter_config.json (a PEFT LoRA adapter directory holds adapter_config.json and "
                   "adapter_model.safetensors)");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw fail("'" + path.string() + "' is not a JSON object");
    if (j.contains("peft_type") && j["peft_type"] != "LORA")
        throw fail("peft_type is " + j["peft_type"].dump() + "; only LORA adapters are converted");
    if (j.value("use_dora", false) == true) throw fail("DoRA adapters (use_dora) are not supported");
    for (const char* key : {"rank_pattern", "alpha_pattern"})
        if (j.contains(key) && !j[key].is_null() && !j[key].empty())
            throw fail(std::string(key) + " is set: per-module ranks or alphas are not supported (one r, one lora_alpha)");
    if (!j.contains("r") || !j["r"].is_number_integer() || j["r"].get<int64_t>() <= 0 || j["r"].get<int64_t>() > 65536)
        throw fail("adapter_config.json needs a positive integer 'r'");
    if (!j.contains("lora_alpha") || !j["lora_alpha"].is_number() || !(j["lora_alpha"].get<double>() >= 0) ||
        j["lora_alpha"].get<double>() > 1e6)
        throw fail("adapter_config.json needs a non-negative number 'lora_alpha'");
    if (j.contains("target_modules")) {
        const json& t = j["target_modules"];
        if (t.is_array()) {
            for (const json& name : t) {
                if (!name.is_string()) throw fail("target_modules must hold module names");
                if (!known_target(name.get<std::string>()))
                    throw fail("target module '" + name.get<std::string>() +
                               "' has no GGUF counterpart here (supported: q_proj, k_proj, v_proj, o_proj, gate_proj, "
                               "up_proj, down_proj, lm_head)");
            }
        } else if (!t.is_string() && !t.is_null()) {
            throw fail("target_modules must be a list of names or a string");
        }
    }
    return {static_cast<uint32_t>(j["r"].get<int64_t>()), j["lora_alpha"].get<float>()};
}

// One adapted matrix: PEFT's A [rank, in] and B [out, rank], as f32.
struct Pair {
    const StTensor* a = nullptr;
    const StTensor* b = nullptr;
};

std::vector<uint8_t> encode(const std::vector<float>& v, ElementType type) {
    std::vector<uint8_t> out;
    if (type == ElementType::F32) {
        out.resize(v.size() * 4);
        std::memcpy(out.data(), v.data(), out.size());
    } else if (type == ElementType::F16) {
        out.resize(v.size() * 2);
        for (size_t i = 0; i < v.size(); ++i) {
            const f16_bits h = f32_to_f16(v[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    } else {
        out.resize(v.size() * 2);
        for (size_t i = 0; i < v.size(); ++i) {
            const bf16_bits h = f32_to_bf16(v[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    }
    return out;
}

}  // namespace

LoraConvertSummary convert_lora(const fs::path& adapter_dir, const std::string& base_gguf, const std::string& out_path,
                                const LoraConvertOptions& options) {
    if (options.outtype != ElementType::F32 && options.outtype != ElementType::F16 && options.outtype != ElementType::BF16)
        throw fail("--outtype must be f32, f16 or bf16 for an adapter");
    const Config config = read_config(adapter_dir);
    const fs::path st_path = adapter_dir / "adapter_model.safetensors";
    if (!fs::exists(st_path)) {
        if (fs::exists(adapter_dir / "adapter_model.bin"))
            throw fail("only adapter_model.safetensors is read (adapter_model.bin is a pickle; save the adapter with "
                       "safe_serialization=True)");
        throw fail("'" + adapter_dir.string() + "' has no adapter_model.safetensors");
    }
    const auto st = SafetensorsFile::open(st_path.string());
    const auto base = gguf::File::open(base_gguf);
    const std::string arch = base->get_string("general.architecture", "");
    if (arch.empty()) throw fail("'" + base_gguf + "' has no general.architecture");
    if (base->get_string("general.type", "model") == "adapter") throw fail("--base must be a model, not an adapter");

    // Pair the tensors by base matrix name.
    static const std::regex layer_re(R"(^base_model\.model\.(?:model\.)?layers\.(\d{1,6})\.(.+)\.lora_([AB])\.weight$)");
    static const std::regex head_re(R"(^base_model\.model\.lm_head\.lora_([AB])\.weight$)");
    std::map<std::string, Pair> pairs;
    for (const StTensor& t : st->tensors()) {
        std::smatch m;
        std::string gguf_name;
        char half = 0;
        if (std::regex_match(t.name, m, layer_re)) {
            const auto it = layer_modules().find(m[2].str());
            if (it == layer_modules().end())
                throw fail("tensor '" + t.name + "': module '" + m[2].str() + "' has no GGUF counterpart here");
            gguf_name = "blk." + std::to_string(std::stoul(m[1].str())) + "." + it->second + ".weight";
            half = m[3].str()[0];
        } else if (std::regex_match(t.name, m, head_re)) {
            gguf_name = "output.weight";
            half = m[1].str()[0];
        } else {
            throw fail("tensor '" + t.name + "' is not a LoRA tensor this converter knows (expected "
                       "base_model.model.model.layers.N.<module>.lora_A.weight / lora_B.weight)");
        }
        Pair& p = pairs[gguf_name];
        (half == 'A' ? p.a : p.b) = &t;
    }
    if (pairs.empty()) throw fail("the adapter has no LoRA tensors");

    const uint32_t n_head = base->get_u32(arch + ".attention.head_count", 0);
    const uint32_t n_head_kv = base->get_u32(arch + ".attention.head_count_kv", n_head);
    std::vector<std::pair<std::string, std::vector<float>>> a_data, b_data;
    std::vector<std::vector<uint64_t>> a_shapes, b_shapes;
    for (const auto& [name, p] : pairs) {
        if (!p.a || !p.b) throw fail("the pair of '" + name + "' is missing its lora_" + (p.a ? "B" : "A"));
        for (const StTensor* t : {p.a, p.b}) {
            if (t->shape.size() != 2) throw fail("'" + t->name + "' is not a matrix");
            if (t->dtype != StDtype::F32 && t->dtype != StDtype::F16 && t->dtype != StDtype::BF16)
                throw fail("'" + t->name + "' has dtype " + st_dtype_name(t->dtype) + " (need F32, F16 or BF16)");
        }
        const uint64_t rank = p.a->shape[0], n_in = p.a->shape[1], n_out = p.b->shape[0];
        if (rank != config.rank || p.b->shape[1] != config.rank)
            throw fail("'" + name + "': lora_A has rank " + std::to_string(rank) + " and lora_B " +
                       std::to_string(p.b->shape[1]) + ", adapter_config.json's r is " + std::to_string(config.rank));
        const gguf::TensorInfo* w = base->find_tensor(name);
        if (!w) throw fail("'" + name + "' is not a tensor of the base model (is this the adapter's base?)");
        if (w->n_dims != 2 || w->ne[0] != n_in || w->ne[1] != n_out)
            throw fail("'" + name + "': the adapter maps " + std::to_string(n_in) + " -> " + std::to_string(n_out) +
                       " but the base matrix is [" + std::to_string(w->ne[0]) + ", " + std::to_string(w->ne[1]) +
                       "] (is this the adapter's base?)");
        std::vector<float> a = st->to_f32(*p.a), b = st->to_f32(*p.b);
        // The base's Q and K rows were reordered for ggml's RoPE; B's rows are those outputs.
        if (arch == "llama" && (name.ends_with(".attn_q.weight") || name.ends_with(".attn_k.weight")))
            permute_rows(b, n_out, rank, name.ends_with(".attn_q.weight") ? n_head : n_head_kv);
        a_data.push_back({name + ".lora_a", std::move(a)});
        b_data.push_back({name + ".lora_b", std::move(b)});
        a_shapes.push_back({n_in, rank});
        b_shapes.push_back({rank, n_out});
    }

    gguf::Writer writer;
    writer.add_metadata("general.architecture", gguf::Value::string(arch));
    writer.add_metadata("general.type", gguf::Value::string("adapter"));
    writer.add_metadata("general.name", gguf::Value::string(adapter_dir.filename().string()));
    writer.add_metadata("adapter.type", gguf::Value::string("lora"));
    writer.add_metadata("adapter.lora.alpha", gguf::Value::f32(config.alpha));
    std::vector<uint8_t> scratch;
    LoraConvertSummary summary{arch, config.rank, config.alpha, pairs.size(), 0};
    for (size_t i = 0; i < a_data.size(); ++i)
        for (int half = 0; half < 2; ++half) {
            const auto& [tname, values] = half == 0 ? a_data[i] : b_data[i];
            const auto& shape = half == 0 ? a_shapes[i] : b_shapes[i];
            summary.bytes_written += values.size() * (options.outtype == ElementType::F32 ? 4 : 2);
            writer.add_tensor(tname, options.outtype, shape, [&scratch, &values = values, type = options.outtype] {
                scratch = encode(values, type);
                return std::span<const uint8_t>(scratch);
            });
        }
    writer.write(out_path);
    return summary;
}

}  // namespace cria::convert
