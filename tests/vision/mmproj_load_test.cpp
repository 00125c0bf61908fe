// Loading mmproj files: a valid one gives its hyperparameters; every broken
// key or tensor gives a cria::Error naming it, never a crash.

#include <gtest/gtest.h>

#include <functional>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/mmproj.h"
#include "vision/synthetic_mmproj.h"

namespace cria::vision {
namespace {

using gguf::Value;

TEST(MmprojLoad, ReadsTheHyperparameters) {
    const auto m = Mmproj::open(test::write_mmproj(test::small_gemma3_mmproj(), "ok.gguf"));
    const VisionHparams& h = m->hparams();
    EXPECT_EQ(h.projector, ProjectorType::Gemma3);
    EXPECT_EQ(h.image_size, 8);
    EXPECT_EQ(h.patch_size, 2);
    EXPECT_EQ(h.n_embd, 8);
    EXPECT_EQ(h.n_head, 2);
    EXPECT_EQ(h.n_output, 6);
    EXPECT_EQ(h.activation, Activation::GeluTanh);
    EXPECT_EQ(m->n_layer_run(), 1);
    ASSERT_FALSE(m->describe().empty());
    EXPECT_EQ(m->describe()[0], "projector: gemma3");
}

TEST(MmprojLoad, EncodesAnImageOfItsSize) {
    const auto m = Mmproj::open(test::write_mmproj(test::small_gemma3_mmproj(), "enc.gguf"));
    FloatImage px{8, 8, std::vector<float>(8 * 8 * 3, 0.25f)};
    cpu::ThreadPool pool(1);
    ops::CpuOps ops(pool);
    const ImageEmbeddings e = encode_image(*m, px, ops);
    EXPECT_EQ(e.n_tokens, 1);
    EXPECT_EQ(e.n_embd, 6);
    ASSERT_EQ(e.values.size(), 6u);
    px.width = 6;  // not the fixed size
    px.values.resize(6 * 8 * 3);
    EXPECT_THROW(encode_image(*m, px, ops), Error);
}

struct Breakage {
    const char* what;
    std::function<void(test::MmprojSpec&)> apply;
    const char* message;  // part of the error
};

class MmprojMalformed : public ::testing::TestWithParam<Breakage> {};

TEST_P(MmprojMalformed, GivesAClearError) {
    test::MmprojSpec spec = test::small_gemma3_mmproj();
    GetParam().apply(spec);
    const std::string path = test::write_mmproj(spec, std::string("bad-") + GetParam().what + ".gguf");
    try {
        Mmproj::open(path);
        FAIL() << "accepted: " << GetParam().what;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(GetParam().message), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "the file is named: " << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MmprojMalformed,
    ::testing::Values(
        Breakage{"text_model", [](auto& s) { s.set_key("general.architecture", Value::string("llama")); }, "not a projector"},
        Breakage{"no_vision", [](auto& s) { s.set_key("clip.has_vision_encoder", Value::boolean(false)); }, "has_vision_encoder"},
        Breakage{"projector", [](auto& s) { s.set_key("clip.projector_type", Value::string("idefics3")); }, "\"idefics3\" is not supported"},
        Breakage{"no_projector", [](auto& s) { s.erase_key("clip.projector_type"); }, "clip.projector_type"},
        Breakage{"no_patch", [](auto& s) { s.erase_key("clip.vision.patch_size"); }, "missing key clip.vision.patch_size"},
        Breakage{"zero_patch", [](auto& s) { s.set_key("clip.vision.patch_size", Value::u32(0)); }, "clip.vision.patch_size = 0"},
        Breakage{"huge_width", [](auto& s) { s.set_key("clip.vision.embedding_length", Value::u32(4000000000u)); }, "embedding_length"},
        Breakage{"string_width", [](auto& s) { s.set_key("clip.vision.embedding_length", Value::string("8")); }, "embedding_length"},
        Breakage{"heads", [](auto& s) { s.set_key("clip.vision.attention.head_count", Value::u32(3)); }, "not a multiple of head_count"},
        Breakage{"eps", [](auto& s) { s.set_key("clip.vision.attention.layer_norm_epsilon", Value::f32(-1.0f)); }, "layer_norm_epsilon"},
        Breakage{"mean", [](auto& s) { s.set_key("clip.vision.image_mean", Value::array(gguf::ValueType::F32, std::vector<float>{0.5f})); }, "image_mean"},
        Breakage{"std", [](auto& s) { s.set_key("clip.vision.image_std", Value::array(gguf::ValueType::F32, std::vector<float>{0.5f, 0.0f, 0.5f})); }, "image_std"},
        Breakage{"pool", [](auto& s) { s.set_key("clip.vision.image_size", Value::u32(6)); }, "multiple of 4 * patch_size"},
        Breakage{"missing_tensor", [](auto& s) { s.erase_tensor("v.blk.0.attn_k.weight"); }, "missing tensor v.blk.0.attn_k.weight"},
        Breakage{"shape", [](auto& s) { s.set_shape("v.blk.0.ffn_up.weight", {8, 13}); }, "v.blk.0.ffn_up.weight has shape [8, 13], expected [8, 12]"},
        Breakage{"positions", [](auto& s) { s.set_shape("v.position_embd.weight", {8, 15}); }, "v.position_embd.weight"},
        Breakage{"conv", [](auto& s) { s.set_shape("v.patch_embd.weight", {2, 2, 4, 8}); }, "v.patch_embd.weight"},
        Breakage{"blocks", [](auto& s) { s.set_key("clip.vision.block_count", Value::u32(2)); }, "missing tensor v.blk.1."},
        Breakage{"projection", [](auto& s) { s.set_key("clip.vision.projection_dim", Value::u32(7)); }, "projection_dim = 7"},
        Breakage{"tiling", [](auto& s) { s.set_key("clip.vision.image_grid_pinpoints", Value::u32(1)); }, "image_grid_pinpoints"}),
    [](const auto& info) { return std::string(info.param.what); });

}  // namespace
}  // namespace cria::vision
