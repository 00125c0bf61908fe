#include "vision/synthetic_mmproj.h"

#include <algorithm>
#include <deque>
#include <cstring>
#include <random>

#include "cria/core/float16.h"

#include "cria/gguf/writer.h"
#include "support/test_paths.h"

namespace cria::test {

using gguf::Value;
using gguf::ValueType;

void MmprojSpec::set_key(const std::string& key, Value value) {
    for (auto& kv : keys)
        if (kv.first == key) {
            kv.second = std::move(value);
            return;
        }
    keys.emplace_back(key, std::move(value));
}

void MmprojSpec::erase_key(const std::string& key) {
    std::erase_if(keys, [&](const auto& kv) { return kv.first == key; });
}

void MmprojSpec::set_shape(const std::string& tensor, std::vector<uint64_t> shape) {
    for (auto& t : tensors)
        if (t.first == tensor) t.second = std::move(shape);
}

void MmprojSpec::erase_tensor(const std::string& tensor) {
    std::erase_if(tensors, [&](const auto& t) { return t.first == tensor; });
}

MmprojSpec small_gemma3_mmproj() {
    MmprojSpec s;
    s.keys = {
        {"general.architecture", Value::string("clip")},
        {"clip.has_vision_encoder", Value::boolean(true)},
        {"clip.projector_type", Value::string("gemma3")},
        {"clip.vision.image_size", Value::u32(8)},
        {"clip.vision.patch_size", Value::u32(2)},
        {"clip.vision.embedding_length", Value::u32(8)},
        {"clip.vision.feed_forward_length", Value::u32(12)},
        {"clip.vision.block_count", Value::u32(1)},
        {"clip.vision.attention.head_count", Value::u32(2)},
        {"clip.vision.attention.layer_norm_epsilon", Value::f32(1e-6f)},
        {"clip.vision.projection_dim", Value::u32(6)},
        {"clip.vision.image_mean", Value::array(ValueType::F32, std::vector<float>{0.5f, 0.5f, 0.5f})},
        {"clip.vision.image_std", Value::array(ValueType::F32, std::vector<float>{0.5f, 0.5f, 0.5f})},
        {"clip.use_gelu", Value::boolean(true)},
    };
    s.tensors = {
        {"v.patch_embd.weight", {2, 2, 3, 8}}, {"v.patch_embd.bias", {8}},     {"v.position_embd.weight", {8, 16}},
        {"v.post_ln.weight", {8}},             {"v.post_ln.bias", {8}},        {"mm.soft_emb_norm.weight", {8}},
        {"mm.input_projection.weight", {6, 8}},
    };
    for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
        s.tensors.push_back({std::string("v.blk.0.") + p + ".weight", {8, 8}});
        s.tensors.push_back({std::string("v.blk.0.") + p + ".bias", {8}});
    }
    for (const char* n : {"ln1", "ln2"}) {
        s.tensors.push_back({std::string("v.blk.0.") + n + ".weight", {8}});
        s.tensors.push_back({std::string("v.blk.0.") + n + ".bias", {8}});
    }
    s.tensors.push_back({"v.blk.0.ffn_up.weight", {8, 12}});
    s.tensors.push_back({"v.blk.0.ffn_up.bias", {12}});
    s.tensors.push_back({"v.blk.0.ffn_down.weight", {12, 8}});
    s.tensors.push_back({"v.blk.0.ffn_down.bias", {8}});
    return s;
}

namespace {

// The ViT blocks 0..n-1 only (keys and stem from the family).
MmprojSpec family_base(const char* projector, uint32_t blocks) {
    MmprojSpec s = small_gemma3_mmproj();
    s.set_key("clip.projector_type", Value::string(projector));
    s.set_key("clip.vision.block_count", Value::u32(blocks));
    s.erase_key("clip.use_gelu");
    std::erase_if(s.tensors, [](const auto& t) { return t.first.rfind("v.blk.", 0) != 0; });
    const auto block0 = s.tensors;
    for (uint32_t il = 1; il < blocks; ++il)
        for (const auto& [name, shape] : block0)
            s.tensors.push_back({"v.blk." + std::to_string(il) + name.substr(7), shape});
    return s;
}

}  // namespace

MmprojSpec small_mlp_mmproj() {
    MmprojSpec s = family_base("mlp", 3);
    s.set_key("clip.use_gelu", Value::boolean(false));
    s.set_key("clip.vision.image_size", Value::u32(6));
    s.tensors.push_back({"v.class_embd", {8}});
    s.tensors.push_back({"v.patch_embd.weight", {2, 2, 3, 8}});
    s.tensors.push_back({"v.position_embd.weight", {8, 10}});
    s.tensors.push_back({"v.pre_ln.weight", {8}});
    s.tensors.push_back({"v.pre_ln.bias", {8}});
    s.tensors.push_back({"mm.0.weight", {8, 10}});
    s.tensors.push_back({"mm.0.bias", {10}});
    s.tensors.push_back({"mm.2.weight", {10, 6}});
    s.tensors.push_back({"mm.2.bias", {6}});
    return s;
}

MmprojSpec small_qwen2vl_mmproj() {
    MmprojSpec s = family_base("qwen2vl_merger", 2);
    s.tensors.push_back({"v.patch_embd.weight", {2, 2, 3, 8}});
    s.tensors.push_back({"v.patch_embd.weight.1", {2, 2, 3, 8}});
    s.tensors.push_back({"v.post_ln.weight", {8}});
    s.tensors.push_back({"v.post_ln.bias", {8}});
    s.tensors.push_back({"mm.0.weight", {32, 32}});
    s.tensors.push_back({"mm.0.bias", {32}});
    s.tensors.push_back({"mm.2.weight", {32, 6}});
    s.tensors.push_back({"mm.2.bias", {6}});
    return s;
}

MmprojSpec small_muse_glimmer_mmproj() {
    MmprojSpec s = family_base("muse-glimmer", 2);
    s.set_key("clip.vision.spatial_merge_size", Value::u32(2));
    s.tensors.push_back({"v.patch_embd.weight", {2, 2, 3, 8}});
    s.tensors.push_back({"v.patch_embd.bias", {8}});
    s.tensors.push_back({"v.position_embd.weight", {8, 4}});
    for (const char* n : {"v.pre_ln", "v.post_ln"}) {
        s.tensors.push_back({std::string(n) + ".weight", {8}});
        s.tensors.push_back({std::string(n) + ".bias", {8}});
    }
    s.tensors.push_back({"mm.0.weight", {32, 12}});
    s.tensors.push_back({"mm.1.weight", {12, 10}});
    s.tensors.push_back({"mm.2.weight", {10, 6}});
    return s;
}

std::string write_mmproj(const MmprojSpec& spec, const std::string& name) {
    gguf::Writer w;
    for (const auto& [k, v] : spec.keys) w.add_metadata(k, v);
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 0.3f);
    auto storage = std::make_shared<std::deque<std::vector<uint8_t>>>();
    for (const auto& [n, shape] : spec.tensors) {
        uint64_t count = 1;
        for (uint64_t d : shape) count *= d;
        std::vector<float> values(count);
        for (float& v : values) v = dist(rng);
        // Norm weights near 1, as trained models have them.
        if (n.find("ln") != std::string::npos || n.find("norm") != std::string::npos)
            for (float& v : values) v += 1.0f;
        const bool table = n.find("position_embd") != std::string::npos || n == "mm.input_projection.weight";
        if (spec.f16_matrices && shape.size() > 1 && !table) {
            std::vector<uint8_t> half(values.size() * 2);
            for (size_t i = 0; i < values.size(); ++i) {
                const uint16_t h = f32_to_f16(values[i]);
                std::memcpy(half.data() + i * 2, &h, 2);
            }
            storage->push_back(std::move(half));  // a deque: earlier elements never move
            const std::vector<uint8_t>* data = &storage->back();
            w.add_tensor(n, ElementType::F16, shape, [storage, data] { return std::span<const uint8_t>(*data); });
            continue;
        }
        std::vector<uint8_t> bytes(values.size() * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        storage->push_back(std::move(bytes));
        const std::vector<uint8_t>* data = &storage->back();
        w.add_tensor(n, ElementType::F32, shape, [storage, data] { return std::span<const uint8_t>(*data); });
    }
    const std::string path = (temp_dir() / name).string();
    w.write(path);
    return path;
}

}  // namespace cria::test
