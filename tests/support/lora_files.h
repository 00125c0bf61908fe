#pragma once
// Test files for LoRA adapters: random adapter pairs for a base model's
// matrices, adapter GGUFs in llama.cpp's format, and the base with adapters
// merged in (W' = W + s·B·A, computed in double), whose output the adapters
// applied at run time must reproduce. Header-only: used by the runtime and
// the server tests.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"

namespace cria::test {

struct AdapterTensor {
    std::string base;  // e.g. blk.0.attn_q.weight
    int64_t n_in = 0, n_out = 0, rank = 0;
    std::vector<float> a, b;  // [n_in, rank] (ggml order: a[r * n_in + i]), [rank, n_out] (b[o * rank + r])
};

struct AdapterSpec {
    std::vector<AdapterTensor> tensors;
    float alpha = 0.0f;
    std::string arch = "llama";
    std::string general_type = "adapter";
};

inline AdapterTensor random_pair(const gguf::File& base, const std::string& name, int64_t rank, uint32_t seed) {
    const gguf::TensorInfo* w = base.find_tensor(name);
    EXPECT_NE(w, nullptr) << name;
    AdapterTensor t{name, static_cast<int64_t>(w->ne[0]), static_cast<int64_t>(w->ne[1]), rank, {}, {}};
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.3f);
    t.a.resize(static_cast<size_t>(t.n_in * rank));
    t.b.resize(static_cast<size_t>(rank * t.n_out));
    for (float& v : t.a) v = nd(rng);
    for (float& v : t.b) v = nd(rng);
    return t;
}

inline std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
    return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

inline void write_adapter(const AdapterSpec& spec, const std::string& path) {
    gguf::Writer w;
    w.add_metadata("general.architecture", gguf::Value::string(spec.arch));
    w.add_metadata("general.type", gguf::Value::string(spec.general_type));
    w.add_metadata("adapter.type", gguf::Value::string("lora"));
    w.add_metadata("adapter.lora.alpha", gguf::Value::f32(spec.alpha));
    for (const AdapterTensor& t : spec.tensors) {
        const uint64_t a_shape[2] = {static_cast<uint64_t>(t.n_in), static_cast<uint64_t>(t.rank)};
        const uint64_t b_shape[2] = {static_cast<uint64_t>(t.rank), static_cast<uint64_t>(t.n_out)};
        w.add_tensor(t.base + ".lora_a", ElementType::F32, a_shape, [&t] { return bytes_of(t.a); });
        w.add_tensor(t.base + ".lora_b", ElementType::F32, b_shape, [&t] { return bytes_of(t.b); });
    }
    w.write(path);
}

// The base with every adapter merged in: W += scale · B·A (in double, then F32).
inline void write_merged(const gguf::File& base, const std::vector<std::pair<const AdapterSpec*, float>>& adapters,
                  const std::string& path) {
    std::map<std::string, std::vector<float>> merged;
    for (const auto& [spec, user_scale] : adapters)
        for (const AdapterTensor& t : spec->tensors) {
            auto& w = merged[t.base];
            if (w.empty()) {
                const auto data = base.tensor_data(*base.find_tensor(t.base));
                w.assign(reinterpret_cast<const float*>(data.data()),
                         reinterpret_cast<const float*>(data.data()) + data.size() / sizeof(float));
            }
            const double s = spec->alpha != 0.0f ? user_scale * spec->alpha / static_cast<double>(t.rank) : user_scale;
            for (int64_t o = 0; o < t.n_out; ++o)
                for (int64_t i = 0; i < t.n_in; ++i) {
                    double d = 0;
                    for (int64_t r = 0; r < t.rank; ++r)
                        d += static_cast<double>(t.b[static_cast<size_t>(o * t.rank + r)]) * t.a[static_cast<size_t>(r * t.n_in + i)];
                    float& x = w[static_cast<size_t>(o * t.n_in + i)];
                    x = static_cast<float>(x + s * d);
                }
        }
    gguf::Writer w;
    for (const auto& [key, value] : base.metadata()) w.add_metadata(key, value);
    for (const gguf::TensorInfo& t : base.tensors()) {
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        const auto it = merged.find(t.name);
        if (it != merged.end())
            w.add_tensor(t.name, t.type, shape, [v = &it->second] { return bytes_of(*v); });
        else
            w.add_tensor(t.name, t.type, shape, [&base, &t] { return base.tensor_data(t); });
    }
    w.write(path);
}

}  // namespace cria::test
