// Speed of the vision encoder, and the maker of a real-size projector file.
//
//   bench_vision_encode                      Google Benchmark: a small gemma3 encoder
//                                            (4 blocks, width 256, 224x224 image)
//   bench_vision_encode --make-mmproj DIR [N_TEXT [LAYERS]]
//                                            writes gemma3-so400m-mmproj-f16.gguf into DIR:
//                                            Gemma 3's SigLIP-So400m tower (27 blocks,
//                                            width 1152, 16 heads, FFN 4304, patch 14,
//                                            896x896 input, 256 tokens), random F16
//                                            weights (norms F32), projecting to N_TEXT
//                                            (default 2048: llama-1b's width, so it pairs
//                                            with bench_runtime_decode's speed models).
//                                            LAYERS < 27 writes the same tower cut short
//                                            (for timing per block on a busy machine).
//                                            For `cria image-embd`; never committed.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cria/core/float16.h"
#include "cria/cpu/thread_pool.h"
#include "cria/gguf/writer.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/mmproj.h"

namespace {

using namespace cria;
using gguf::Value;
using gguf::ValueType;

struct TowerShape {
    uint32_t width, layers, heads, ffn, patch, image, n_text;
};

// A gemma3-layout projector with random weights: matrices F16 ~ N(0, 0.02)
// (as tools/mkmodel.py makes text models), norms and biases F32.
void write_gemma3_mmproj(const TowerShape& t, const std::string& path) {
    gguf::Writer w;
    w.add_metadata("general.architecture", Value::string("clip"));
    w.add_metadata("general.type", Value::string("mmproj"));
    w.add_metadata("clip.has_vision_encoder", Value::boolean(true));
    w.add_metadata("clip.projector_type", Value::string("gemma3"));
    w.add_metadata("clip.vision.image_size", Value::u32(t.image));
    w.add_metadata("clip.vision.patch_size", Value::u32(t.patch));
    w.add_metadata("clip.vision.embedding_length", Value::u32(t.width));
    w.add_metadata("clip.vision.feed_forward_length", Value::u32(t.ffn));
    w.add_metadata("clip.vision.block_count", Value::u32(t.layers));
    w.add_metadata("clip.vision.attention.head_count", Value::u32(t.heads));
    w.add_metadata("clip.vision.attention.layer_norm_epsilon", Value::f32(1e-6f));
    w.add_metadata("clip.vision.projection_dim", Value::u32(t.n_text));
    w.add_metadata("clip.vision.image_mean", Value::array(ValueType::F32, std::vector<float>{0.5f, 0.5f, 0.5f}));
    w.add_metadata("clip.vision.image_std", Value::array(ValueType::F32, std::vector<float>{0.5f, 0.5f, 0.5f}));
    w.add_metadata("clip.use_gelu", Value::boolean(true));
    const uint64_t c = t.width, g = t.image / t.patch;
    std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors = {
        {"v.patch_embd.weight", {t.patch, t.patch, 3, c}}, {"v.patch_embd.bias", {c}},
        {"v.position_embd.weight", {c, g * g}},            {"v.post_ln.weight", {c}},
        {"v.post_ln.bias", {c}},                           {"mm.soft_emb_norm.weight", {c}},
        {"mm.input_projection.weight", {t.n_text, c}}};
    for (uint32_t il = 0; il < t.layers; ++il) {
        const std::string b = "v.blk." + std::to_string(il) + ".";
        for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
            tensors.push_back({b + p + ".weight", {c, c}});
            tensors.push_back({b + p + ".bias", {c}});
        }
        for (const char* n : {"ln1", "ln2"}) {
            tensors.push_back({b + n + ".weight", {c}});
            tensors.push_back({b + n + ".bias", {c}});
        }
        tensors.push_back({b + "ffn_up.weight", {c, t.ffn}});
        tensors.push_back({b + "ffn_up.bias", {t.ffn}});
        tensors.push_back({b + "ffn_down.weight", {t.ffn, c}});
        tensors.push_back({b + "ffn_down.bias", {c}});
    }
    // One buffer reused per tensor: the writer asks for each tensor's bytes in turn.
    auto buffer = std::make_shared<std::vector<uint8_t>>();
    auto rng = std::make_shared<std::mt19937>(1);
    for (const auto& [name, shape] : tensors) {
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        const bool matrix = shape.size() > 1;
        w.add_tensor(name, matrix ? ElementType::F16 : ElementType::F32, shape, [buffer, rng, n, matrix] {
            std::normal_distribution<float> dist(0.0f, 0.02f);
            if (matrix) {
                buffer->resize(n * 2);
                auto* h = reinterpret_cast<uint16_t*>(buffer->data());
                for (uint64_t i = 0; i < n; ++i) h[i] = f32_to_f16(dist(*rng));
            } else {
                buffer->resize(n * 4);
                auto* f = reinterpret_cast<float*>(buffer->data());
                for (uint64_t i = 0; i < n; ++i) f[i] = 1.0f + dist(*rng);
            }
            return std::span<const uint8_t>(*buffer);
        });
    }
    w.write(path);
}

void BM_EncodeSmallGemma3(benchmark::State& state) {
    static const std::string path = [] {
        const std::string p = (std::filesystem::temp_directory_path() / "cria-bench-vision-small.gguf").string();
        write_gemma3_mmproj({256, 4, 4, 1024, 14, 224, 256}, p);
        return p;
    }();
    const auto m = vision::Mmproj::open(path);
    cpu::ThreadPool pool(static_cast<int>(state.range(0)));
    ops::CpuOps ops(pool);
    vision::FloatImage px{224, 224, std::vector<float>(224 * 224 * 3, 0.1f)};
    for (auto _ : state) benchmark::DoNotOptimize(vision::encode_image(*m, px, ops));
}
BENCHMARK(BM_EncodeSmallGemma3)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 3 && std::strcmp(argv[1], "--make-mmproj") == 0) {
        const uint32_t n_text = argc >= 4 ? static_cast<uint32_t>(std::stoul(argv[3])) : 2048;
        const uint32_t layers = argc >= 5 ? static_cast<uint32_t>(std::stoul(argv[4])) : 27;
        const std::string name = layers == 27 ? "gemma3-so400m-mmproj-f16.gguf"
                                              : "gemma3-so400m-" + std::to_string(layers) + "-blocks-mmproj-f16.gguf";
        const std::string path = (std::filesystem::path(argv[2]) / name).string();
        write_gemma3_mmproj({1152, layers, 16, 4304, 14, 896, n_text}, path);
        std::printf("%s\n", path.c_str());
        return 0;
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
