// Hugging Face checkpoint -> GGUF, following llama.cpp's convert_hf_to_gguf.py
// for the architectures below: the same tensor names, the same transforms
// (Llama's Q/K row permutation, Gemma's norm + 1, Llama 3 rope factors, experts
// stacked per layer, gpt-oss's MXFP4 blocks repacked), the same metadata keys
// in the same order.

#include "cria/convert/convert.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "checkpoint.h"
#include "cria/convert/tokenizer_import.h"
#include "expert_tensors.h"
#include "gpt_oss_tensors.h"
#include "planned_tensor.h"
#include "rope_permute.h"
#include "cria/core/error.h"
#include "cria/core/float16.h"
#include "cria/gguf/writer.h"
#include "cria/quant/quantize.h"

namespace cria::convert {
namespace {

namespace fs = std::filesystem;
using gguf::Value;
using nlohmann::json;

enum class Family { Llama, Qwen2, Qwen3, Qwen3Moe, Gemma2, Gemma3, Phi3, GptOss };

struct ArchInfo {
    const char* hf_class;
    Family family;
    const char* gguf_arch;
};

constexpr ArchInfo kArchs[] = {
    {"LlamaForCausalLM", Family::Llama, "llama"},   {"MistralForCausalLM", Family::Llama, "llama"},
    {"Qwen2ForCausalLM", Family::Qwen2, "qwen2"},   {"Qwen3ForCausalLM", Family::Qwen3, "qwen3"},
    {"Gemma2ForCausalLM", Family::Gemma2, "gemma2"}, {"Gemma3ForCausalLM", Family::Gemma3, "gemma3"},
    {"Phi3ForCausalLM", Family::Phi3, "phi3"},
    // Mixture-of-experts checkpoints (llama.cpp's LlamaModel, Qwen3MoeModel, GptOssModel).
    {"MixtralForCausalLM", Family::Llama, "llama"}, {"Qwen3MoeForCausalLM", Family::Qwen3Moe, "qwen3moe"},
    {"GptOssForCausalLM", Family::GptOss, "gpt-oss"},
};

// Reads a config value with a clear error when it is missing or mistyped.
class Config {
public:
    explicit Config(json j) : j_(std::move(j)) {}
    const json& raw() const { return j_; }
    bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
    uint32_t u32(const char* key) const {
        if (!has(key) || !j_[key].is_number_integer() || j_[key].get<int64_t>() < 0 ||
            j_[key].get<int64_t>() > UINT32_MAX)
            throw Error(std::string("convert: config.json needs a non-negative integer '") + key + "'");
        return static_cast<uint32_t>(j_[key].get<int64_t>());
    }
    uint32_t u32(const char* key, uint32_t fallback) const { return has(key) ? u32(key) : fallback; }
    float f32(const char* key, float fallback) const {
        if (!has(key)) return fallback;
        if (!j_[key].is_number()) throw Error(std::string("convert: config.json '") + key + "' is not a number");
        return j_[key].get<float>();
    }
    // The first of `keys` present, as convert_hf_to_gguf's find_hparam.
    std::optional<uint32_t> first_u32(std::initializer_list<const char*> keys) const {
        for (const char* k : keys)
            if (has(k)) return u32(k);
        return std::nullopt;
    }
    bool boolean(const char* key, bool fallback) const {
        return has(key) && j_[key].is_boolean() ? j_[key].get<bool>() : fallback;
    }

private:
    json j_;
};

// Hugging Face block member -> (GGUF name, order within the block).
struct Role {
    const char* hf;
    const char* gguf;
};

std::vector<Role> block_roles(Family f) {
    const bool gemma = f == Family::Gemma2 || f == Family::Gemma3;
    // gpt-oss's post-attention norm is the FFN's input norm, but llama.cpp names it like Gemma's.
    const bool post_attention_norm = gemma || f == Family::GptOss;
    return {
        {"input_layernorm", "attn_norm"},
        {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},
        {"self_attn.qkv_proj", "attn_qkv"},
        {"self_attn.q_norm", "attn_q_norm"},
        {"self_attn.k_norm", "attn_k_norm"},
        {"self_attn.o_proj", "attn_output"},
        {"self_attn.sinks", "attn_sinks"},
        {"post_attention_layernorm", post_attention_norm ? "post_attention_norm" : "ffn_norm"},
        {"pre_feedforward_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"},
        {"mlp.gate_up_proj", "ffn_up"},
        {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
        // The expert router (Qwen3-MoE, Mixtral, gpt-oss) and the stacked experts.
        {"mlp.gate", "ffn_gate_inp"},
        {"block_sparse_moe.gate", "ffn_gate_inp"},
        {"mlp.router", "ffn_gate_inp"},
        {"", "ffn_gate_exps"},
        {"", "ffn_up_exps"},
        {"", "ffn_down_exps"},
        {"post_feedforward_layernorm", "post_ffw_norm"},
    };
}

// Llama 3.1+ "llama3" rope scaling is stored as per-frequency factors in a
// rope_freqs.weight tensor (LlamaModel.generate_extra_tensors).
std::vector<float> llama3_rope_factors(const json& rs, float theta, uint32_t head_dim) {
    const double factor = rs.value("factor", 8.0), low = rs.value("low_freq_factor", 1.0),
                 high = rs.value("high_freq_factor", 4.0);
    const double old_ctx = rs.value("original_max_position_embeddings", 8192.0);
    const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
    std::vector<float> factors;
    for (uint32_t i = 0; i < head_dim; i += 2) {
        const float freq = 1.0f / std::pow(theta, static_cast<float>(i) / static_cast<float>(head_dim));
        const double wavelen = 2 * M_PI / freq;
        if (wavelen < high_wavelen) factors.push_back(1.0f);
        else if (wavelen > low_wavelen) factors.push_back(static_cast<float>(factor));
        else {
            const double smooth = (old_ctx / wavelen - low) / (high - low);
            factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / factor + smooth)));
        }
    }
    return factors;
}

// GGUF type of one tensor for the requested output type (convert_hf_to_gguf's
// rule: 1-D tensors, norms, the expert router and anything not named
// ".weight" (2-D expert biases) stay f32; q8_0 needs rows of whole blocks;
// tensors copied in their own block format keep it).
ElementType tensor_type(const Planned& p, ElementType outtype) {
    if (p.raw_type) return *p.raw_type;
    const bool is_norm = p.name.ends_with("_norm.weight");
    if (p.shape.size() <= 1 || is_norm) return ElementType::F32;
    if (!p.name.ends_with(".weight") || p.name.find(".ffn_gate_inp.") != std::string::npos) return ElementType::F32;
    if (outtype == ElementType::Q8_0 && p.shape[0] % 32 != 0) return ElementType::F16;
    return outtype;
}

json read_json_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("convert: cannot open '" + path.string() + "'");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error("convert: '" + path.string() + "' is not a valid JSON object");
    return j;
}

std::string supported_list() {
    std::string s;
    for (const auto& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.hf_class);
    return s;
}

uint32_t file_type_of(ElementType t) {
    switch (t) {
        case ElementType::F32: return 0;
        case ElementType::F16: return 1;
        case ElementType::Q8_0: return 7;
        case ElementType::BF16: return 32;
        default: throw Error("convert: --outtype must be f32, f16, bf16 or q8_0");
    }
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& a : kArchs) v.push_back(a.hf_class);
        return v;
    }();
    return names;
}

std::string size_label(uint64_t n) {
    double scaled;
    const char* suffix;
    if (n > 1e12) scaled = n * 1e-12, suffix = "T";
    else if (n > 1e9) scaled = n * 1e-9, suffix = "B";
    else if (n > 1e6) scaled = n * 1e-6, suffix = "M";
    else scaled = n * 1e-3, suffix = "K";
    // Two significant digits at least: 7.3M, 13B, 405B.
    const std::string whole = std::to_string(static_cast<long long>(std::nearbyint(scaled)));
    const size_t digits = whole == "0" ? 0 : whole.size();
    const int fix = std::max(2 - static_cast<int>(digits), 0);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f%s", fix, scaled, suffix);
    return buf;
}

ConvertSummary convert(const fs::path& dir, const std::string& out_path, const ConvertOptions& options,
                       const ConvertProgress& progress) {
    const uint32_t file_type = file_type_of(options.outtype);
    const Config cfg(read_json_file(dir / "config.json"));
    std::string hf_class;
    if (cfg.has("architectures") && cfg.raw()["architectures"].is_array() && !cfg.raw()["architectures"].empty() &&
        cfg.raw()["architectures"][0].is_string())
        hf_class = cfg.raw()["architectures"][0].get<std::string>();
    const ArchInfo* arch = nullptr;
    for (const auto& a : kArchs)
        if (hf_class == a.hf_class) arch = &a;
    if (!arch)
        throw Error("convert: architecture '" + (hf_class.empty() ? std::string("(none in config.json)") : hf_class) +
                    "' is not supported; supported: " + supported_list());
    const Family family = arch->family;
    const std::string A = arch->gguf_arch;

    const uint32_t n_embd = cfg.u32("hidden_size");
    const uint32_t n_layer = cfg.u32("num_hidden_layers");
    const uint32_t n_head = cfg.u32("num_attention_heads");
    const uint32_t n_head_kv = cfg.u32("num_key_value_heads", n_head);
    const uint32_t n_ff = cfg.u32("intermediate_size");
    const uint32_t n_ctx = cfg.u32("max_position_embeddings");
    if (n_head == 0 || n_head_kv == 0 || n_layer == 0 || n_embd == 0 || n_layer > 4096)
        throw Error("convert: config.json has zero heads, layers or width (or too many layers)");
    const uint32_t head_dim = cfg.u32("head_dim", n_embd / n_head);
    const float rms_eps = cfg.f32("rms_norm_eps", 1e-6f);
    const bool gemma = family == Family::Gemma2 || family == Family::Gemma3;
    const float rope_theta = cfg.f32("rope_theta", family == Family::Gemma3 ? 1e6f : 10000.0f);
    const bool tied = cfg.boolean("tie_word_embeddings", gemma);

    // Experts: llama.cpp reads num_local_experts or num_experts, num_experts_per_tok or num_experts_per_token.
    const std::optional<uint32_t> n_expert_key = cfg.first_u32({"num_local_experts", "num_experts"});
    const uint32_t n_expert = n_expert_key.value_or(0);
    const std::optional<uint32_t> n_expert_used = cfg.first_u32({"num_experts_per_tok", "num_experts_per_token"});
    if ((family == Family::Qwen3Moe || family == Family::GptOss || hf_class == "MixtralForCausalLM") &&
        (n_expert == 0 || !n_expert_used || *n_expert_used == 0 || *n_expert_used > n_expert))
        throw Error("convert: " + hf_class + " needs num_experts (or num_local_experts) > 0 and 0 < num_experts_per_tok <= it");
    if (n_expert > 4096) throw Error("convert: config.json asks for " + std::to_string(n_expert) + " experts");

    Checkpoint ckpt(dir);

    // --- Plan the tensors -------------------------------------------------
    std::vector<Planned> plan;
    const std::regex block_re(R"(^model\.layers\.(\d+)\.(.+)\.(weight|bias)$)");
    const std::regex layer_re(R"(^model\.layers\.(\d+)\.(.+)$)");
    const auto roles = block_roles(family);
    // A block member's place in llama.cpp's order, from its GGUF name.
    auto role_of = [&roles](const std::string& gguf_name) {
        for (size_t r = 0; r < roles.size(); ++r)
            if (gguf_name.find(std::string(".") + roles[r].gguf + ".") != std::string::npos) return static_cast<int>(r);
        return static_cast<int>(roles.size());
    };
    auto layer_index = [&](const std::string& hf_name, const std::string& digits) {
        const int layer = digits.size() > 6 ? INT32_MAX : std::stoi(digits);
        if (layer >= static_cast<int>(n_layer))
            throw Error("convert: tensor '" + hf_name + "' is in layer " + digits + " of " + std::to_string(n_layer));
        return layer;
    };
    ExpertStacker experts(n_expert);
    for (const auto& [hf_name, entry] : ckpt.tensors()) {
        const StTensor& t = *entry.tensor;
        std::smatch lm;
        if ((family == Family::GptOss || family == Family::Qwen3Moe) && std::regex_match(hf_name, lm, layer_re)) {
            std::vector<Planned> parts;
            const int layer = layer_index(hf_name, lm[1].str());
            if (family == Family::GptOss ? plan_gpt_oss_tensor(ckpt, hf_name, layer, lm[2].str(), n_expert, parts)
                                         : plan_fused_experts(ckpt, hf_name, layer, lm[2].str(), n_expert, parts)) {
                for (Planned& q : parts) {
                    q.role = role_of(q.name);
                    plan.push_back(std::move(q));
                }
                continue;
            }
        }
        Planned p;
        p.source = hf_name;
        for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) p.shape.push_back(*it);
        std::smatch m;
        if (hf_name == "model.embed_tokens.weight") {
            p.name = "token_embd.weight";
            p.layer = -2;
        } else if (hf_name == "model.norm.weight") {
            p.name = "output_norm.weight";
            p.layer = 1 << 30;
        } else if (hf_name == "lm_head.weight") {
            if (tied) continue;  // the output projection is the token embedding
            p.name = "output.weight";
            p.layer = (1 << 30) + 1;
        } else if (hf_name.ends_with("rotary_emb.inv_freq")) {
            continue;  // recomputed at run time
        } else if (std::regex_match(hf_name, m, block_re)) {
            p.layer = layer_index(hf_name, m[1].str());
            const std::string member = m[2].str();
            p.is_bias = m[3].str() == "bias";
            if (const auto expert = parse_expert_member(member); expert && !p.is_bias && n_expert > 0) {
                experts.add(p.layer, *expert, hf_name, t);
                continue;
            }
            for (size_t r = 0; r < roles.size(); ++r)
                if (member == roles[r].hf) {
                    p.name = "blk." + m[1].str() + "." + roles[r].gguf + "." + m[3].str();
                    p.role = static_cast<int>(r);
                }
            if (p.name.empty()) throw Error("convert: tensor '" + hf_name + "' is not known for " + hf_class);
        } else {
            throw Error("convert: tensor '" + hf_name + "' is not known for " + hf_class);
        }
        if (t.shape.empty() || t.shape.size() > 2)
            throw Error("convert: tensor '" + hf_name + "' has " + std::to_string(t.shape.size()) + " dimensions");
        if (t.n_elements() == 0) throw Error("convert: tensor '" + hf_name + "' is empty");
        if (t.dtype != StDtype::F32 && t.dtype != StDtype::F16 && t.dtype != StDtype::BF16 && t.dtype != StDtype::F64)
            throw Error("convert: tensor '" + hf_name + "' has dtype " + st_dtype_name(t.dtype) + " (need F32, F16, BF16)");

        // Transforms.
        const uint64_t rows = t.shape[0], cols = t.shape.size() > 1 ? t.shape[1] : 1;
        if (family == Family::Llama && (p.name.find(".attn_q.") != std::string::npos || p.name.find(".attn_k.") != std::string::npos)) {
            const uint32_t heads = p.name.find(".attn_q.") != std::string::npos ? n_head : n_head_kv;
            p.transform = [rows, cols, heads](std::vector<float>& w) { permute_rows(w, rows, cols, heads); };
        }
        // Gemma stores norm weights as offsets from 1 (it multiplies by 1 + w).
        if (gemma && p.name.ends_with("norm.weight"))
            p.transform = [](std::vector<float>& w) {
                for (float& x : w) x += 1.0f;
            };
        plan.push_back(std::move(p));
    }
    for (Planned& q : experts.finish()) {
        q.role = role_of(q.name);
        plan.push_back(std::move(q));
    }
    if (!ckpt.find("model.embed_tokens.weight")) throw Error("convert: checkpoint has no model.embed_tokens.weight");
    const uint32_t n_vocab = static_cast<uint32_t>(ckpt.find("model.embed_tokens.weight")->tensor->shape[0]);
    if (!tied && !ckpt.find("lm_head.weight"))
        throw Error("convert: tie_word_embeddings is false but the checkpoint has no lm_head.weight");

    // Llama 3 rope scaling becomes a tensor of per-frequency factors.
    const json rope_scaling = cfg.has("rope_scaling") ? cfg.raw()["rope_scaling"] : json();
    std::string rope_type;
    if (rope_scaling.is_object()) rope_type = rope_scaling.value("rope_type", rope_scaling.value("type", ""));
    if (family == Family::Llama && rope_type == "llama3") {
        Planned p;
        p.name = "rope_freqs.weight";
        p.generated = llama3_rope_factors(rope_scaling, rope_theta, head_dim);
        p.shape = {p.generated.size()};
        p.layer = -1;
        plan.push_back(std::move(p));
    }
    if (family == Family::Phi3 && (rope_type == "longrope" || rope_type == "su"))
        throw Error("convert: Phi-3 LongRoPE (rope_scaling type '" + rope_type + "') is not supported yet");

    // llama.cpp's order: token embedding, then block by block in the order the
    // layers use them, then the output norm and projection.
    std::stable_sort(plan.begin(), plan.end(), [](const Planned& a, const Planned& b) {
        if (a.layer != b.layer) return a.layer < b.layer;
        if (a.role != b.role) return a.role < b.role;
        return a.is_bias < b.is_bias;
    });

    // Two checkpoint tensors for one GGUF tensor (say fused and per-expert
    // copies of the same experts) would make an ambiguous file.
    for (size_t i = 0; i < plan.size(); ++i)
        for (size_t j = i + 1; j < plan.size() && plan[j].layer == plan[i].layer; ++j)
            if (plan[j].name == plan[i].name)
                throw Error("convert: the checkpoint gives tensor '" + plan[i].name + "' twice");

    // gguf-py's parameter counts: expert tensors ("_exps.") count once per
    // expert in the size label ("8x7.2B": experts x (shared + one expert)).
    uint64_t n_params = 0, shared_params = 0, expert_params = 0, expert_sum = 0, n_expert_tensors = 0;
    bool has_mxfp4 = false;
    for (const Planned& p : plan) {
        uint64_t n = 1;
        for (uint64_t d : p.shape) n *= d;
        n_params += n;
        has_mxfp4 |= p.raw_type == ElementType::MXFP4;
        if (p.name.find("_exps.") != std::string::npos) {
            const uint64_t count = p.shape.back();
            expert_params += n / count;
            expert_sum += count;
            ++n_expert_tensors;
        } else {
            shared_params += n;
        }
    }
    const std::string label = n_expert_tensors == 0
                                  ? size_label(n_params)
                                  : std::to_string(expert_sum / n_expert_tensors) + "x" + size_label(shared_params + expert_params);
    // A float conversion of a checkpoint whose experts stay MXFP4 is labelled as such (llama.cpp's prepare_metadata).
    const uint32_t file_type_written =
        has_mxfp4 && (file_type == 0 || file_type == 1 || file_type == 32) ? 38 : file_type;

    // --- Metadata ---------------------------------------------------------
    gguf::Writer w;
    auto add = [&](const std::string& k, Value v) { w.add_metadata(k, std::move(v)); };
    std::string name = options.name;
    if (name.empty()) {
        fs::path d = fs::absolute(dir).lexically_normal();
        if (d.filename().empty()) d = d.parent_path();
        name = d.filename().string();
        // A checkpoint kept in ".../<model>/hf" is named after <model>.
        if ((name == "hf" || name == "huggingface") && d.has_parent_path()) name = d.parent_path().filename().string();
    }
    add("general.architecture", Value::string(A));
    add("general.type", Value::string("model"));
    add("general.name", Value::string(name));
    add("general.size_label", Value::string(label));
    auto u32 = [&](const std::string& k, uint32_t v) { add(A + "." + k, Value::u32(v)); };
    auto f32 = [&](const std::string& k, float v) { add(A + "." + k, Value::f32(v)); };
    const bool has_head_dim = cfg.has("head_dim");
    // TextModel's expert keys, right after the norm epsilon, whenever config.json has them.
    auto add_expert_counts = [&] {
        if (n_expert_key) u32("expert_count", *n_expert_key);
        if (n_expert_used) u32("expert_used_count", *n_expert_used);
    };
    auto scaling_number = [&](const char* key) {
        if (!rope_scaling.contains(key) || !rope_scaling[key].is_number())
            throw Error(std::string("convert: rope_scaling needs a number '") + key + "'");
        return rope_scaling[key].get<double>();
    };
    switch (family) {
        case Family::Llama:
        case Family::Qwen2:
        case Family::Qwen3:
        case Family::Qwen3Moe:
            u32("block_count", n_layer);
            u32("context_length", n_ctx);
            u32("embedding_length", n_embd);
            u32("feed_forward_length", n_ff);
            u32("attention.head_count", n_head);
            u32("attention.head_count_kv", n_head_kv);
            f32("rope.freq_base", rope_theta);
            f32("attention.layer_norm_rms_epsilon", rms_eps);
            add_expert_counts();
            if (has_head_dim) {
                u32("attention.key_length", head_dim);
                u32("attention.value_length", head_dim);
            }
            add("general.file_type", Value::u32(file_type));
            if (family == Family::Qwen3Moe) {  // Qwen2MoeModel's additions
                if (cfg.has("moe_intermediate_size")) u32("expert_feed_forward_length", cfg.u32("moe_intermediate_size"));
                if (cfg.has("shared_expert_intermediate_size"))
                    u32("expert_shared_feed_forward_length", cfg.u32("shared_expert_intermediate_size"));
            }
            if (family == Family::Llama) {
                u32("vocab_size", n_vocab);
                u32("rope.dimension_count", head_dim);
            }
            if (rope_type == "linear" && rope_scaling.contains("factor")) {
                add(A + ".rope.scaling.type", Value::string("linear"));
                f32("rope.scaling.factor", rope_scaling["factor"].get<float>());
            } else if (rope_type == "yarn" && rope_scaling.contains("factor")) {
                add(A + ".rope.scaling.type", Value::string("yarn"));
                f32("rope.scaling.factor", rope_scaling["factor"].get<float>());
                u32("rope.scaling.original_context_length", rope_scaling.value("original_max_position_embeddings", n_ctx));
            }
            break;
        case Family::Gemma2:
            u32("context_length", n_ctx);
            u32("embedding_length", n_embd);
            u32("block_count", n_layer);
            u32("feed_forward_length", n_ff);
            u32("attention.head_count", n_head);
            u32("attention.head_count_kv", n_head_kv);
            f32("attention.layer_norm_rms_epsilon", rms_eps);
            u32("attention.key_length", head_dim);
            u32("attention.value_length", head_dim);
            add("general.file_type", Value::u32(file_type));
            f32("attn_logit_softcapping", cfg.f32("attn_logit_softcapping", 50.0f));
            f32("final_logit_softcapping", cfg.f32("final_logit_softcapping", 30.0f));
            u32("attention.sliding_window", cfg.u32("sliding_window", 4096));
            break;
        case Family::Gemma3:
            u32("context_length", n_ctx);
            u32("embedding_length", n_embd);
            u32("block_count", n_layer);
            u32("feed_forward_length", n_ff);
            u32("attention.head_count", n_head);
            f32("attention.layer_norm_rms_epsilon", rms_eps);
            u32("attention.key_length", head_dim);
            u32("attention.value_length", head_dim);
            add("general.file_type", Value::u32(file_type));
            f32("rope.freq_base", rope_theta);
            u32("attention.sliding_window", cfg.u32("sliding_window", 4096));
            u32("attention.head_count_kv", n_head_kv);
            if (rope_type == "linear" && rope_scaling.contains("factor")) {
                add(A + ".rope.scaling.type", Value::string("linear"));
                f32("rope.scaling.factor", rope_scaling["factor"].get<float>());
            }
            break;
        case Family::GptOss:
            u32("block_count", n_layer);
            u32("context_length", n_ctx);
            u32("embedding_length", n_embd);
            u32("feed_forward_length", n_ff);
            u32("attention.head_count", n_head);
            u32("attention.head_count_kv", n_head_kv);
            // TextModel writes the rope scaling before the base frequency.
            if (rope_type == "yarn" && rope_scaling.contains("factor")) {
                add(A + ".rope.scaling.type", Value::string("yarn"));
                f32("rope.scaling.factor", static_cast<float>(scaling_number("factor")));
                u32("rope.scaling.original_context_length",
                    static_cast<uint32_t>(scaling_number("original_max_position_embeddings")));
                if (rope_scaling.contains("beta_fast"))
                    f32("rope.scaling.yarn_beta_fast", static_cast<float>(scaling_number("beta_fast")));
                if (rope_scaling.contains("beta_slow"))
                    f32("rope.scaling.yarn_beta_slow", static_cast<float>(scaling_number("beta_slow")));
            } else if (!rope_type.empty()) {
                throw Error("convert: gpt-oss rope_scaling type '" + rope_type + "' is not supported (yarn is)");
            }
            f32("rope.freq_base", rope_theta);
            f32("attention.layer_norm_rms_epsilon", rms_eps);
            add_expert_counts();
            if (has_head_dim) {
                u32("attention.key_length", head_dim);
                u32("attention.value_length", head_dim);
            }
            add("general.file_type", Value::u32(file_type_written));
            u32("attention.sliding_window", cfg.u32("sliding_window"));
            u32("expert_feed_forward_length", n_ff);
            break;
        case Family::Phi3: {
            const float partial = cfg.f32("partial_rotary_factor", 1.0f);
            u32("context_length", n_ctx);
            u32("rope.scaling.original_context_length", cfg.u32("original_max_position_embeddings", n_ctx));
            u32("embedding_length", n_embd);
            u32("feed_forward_length", n_ff);
            u32("block_count", n_layer);
            u32("attention.head_count", n_head);
            u32("attention.head_count_kv", n_head_kv);
            f32("attention.layer_norm_rms_epsilon", rms_eps);
            u32("rope.dimension_count", static_cast<uint32_t>(static_cast<float>(n_embd / n_head) * partial));
            f32("rope.freq_base", rope_theta);
            add("general.file_type", Value::u32(file_type));
            u32("attention.sliding_window", cfg.has("sliding_window") ? cfg.u32("sliding_window") : 0);
            break;
        }
    }
    add("general.quantization_version", Value::u32(2));
    Metadata tokenizer;
    add_tokenizer_metadata(dir, cfg.raw(), n_vocab, tokenizer);
    for (auto& [k, v] : tokenizer) add(k, std::move(v));

    // --- Tensors, converted one at a time while the file is written ----------
    ConvertSummary summary{hf_class, A, plan.size(), n_params, 0};
    auto buffer = std::make_shared<std::vector<uint8_t>>();
    size_t done = 0;
    for (const Planned& p : plan) {
        const ElementType type = tensor_type(p, options.outtype);
        w.add_tensor(p.name, type, p.shape, [&, type, buffer]() -> std::span<const uint8_t> {
            std::vector<float> values;
            if (p.raw) {
                *buffer = p.raw();
                if (buffer->size() != *row_size_bytes(type, p.shape[0]) * (p.shape.size() > 1 ? p.shape[1] : 1) *
                                           (p.shape.size() > 2 ? p.shape[2] : 1))
                    throw Error("convert: tensor '" + p.name + "' came out the wrong size");
                summary.bytes_written += buffer->size();
                if (progress) progress(++done, plan.size(), p.name);
                return *buffer;
            }
            if (!p.stacked.empty()) {
                values.reserve(p.shape[0] * p.shape[1] * p.shape[2]);
                for (const std::string& src : p.stacked) {
                    const Checkpoint::Entry& e = *ckpt.find(src);
                    const std::vector<float> part = e.file->to_f32(*e.tensor);
                    values.insert(values.end(), part.begin(), part.end());
                }
            } else if (p.source.empty()) {
                values = p.generated;
            } else {
                const Checkpoint::Entry& e = *ckpt.find(p.source);
                values = e.file->to_f32(*e.tensor);
            }
            if (p.transform) p.transform(values);
            const int64_t n_per_row = static_cast<int64_t>(p.shape[0]);
            const int64_t n_rows = static_cast<int64_t>(values.size()) / n_per_row;
            buffer->resize(*row_size_bytes(type, p.shape[0]) * static_cast<size_t>(n_rows));
            quant::quantize_rows(type, values.data(), buffer->data(), n_rows, n_per_row);
            summary.bytes_written += buffer->size();
            if (progress) progress(++done, plan.size(), p.name);
            return *buffer;
        });
    }
    w.write(out_path);
    return summary;
}

}  // namespace cria::convert
