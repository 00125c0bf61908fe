// The optimised encoders (op API, F32) against the float64 reference on
// small random projectors of every family and random images of several
// shapes — no fixture files needed.

#include <gtest/gtest.h>

#include <random>

#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/reference_encoder.h"
#include "vision/synthetic_mmproj.h"

namespace cria::vision {
namespace {

FloatImage random_pixels(int64_t w, int64_t h, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    FloatImage px{w, h, std::vector<float>(static_cast<size_t>(w * h * 3))};
    for (float& v : px.values) v = dist(rng);
    return px;
}

double nmse(const ImageEmbeddings& got, const ImageEmbeddings& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.values.size(); ++i) {
        num += (static_cast<double>(got.values[i]) - ref.values[i]) * (static_cast<double>(got.values[i]) - ref.values[i]);
        den += static_cast<double>(ref.values[i]) * ref.values[i];
    }
    return num / den;
}

struct Case {
    const char* name;
    test::MmprojSpec (*spec)();
    int64_t width, height;
    int64_t tokens;
};

class ReferenceEncoder : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceEncoder, OptimisedEncoderMatchesFloat64) {
    const Case& c = GetParam();
    const auto m = Mmproj::open(test::write_mmproj(c.spec(), std::string("ref-") + c.name + ".gguf"));
    const FloatImage px = random_pixels(c.width, c.height, 11);
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    const ImageEmbeddings got = encode_image(*m, px, ops);
    const ImageEmbeddings ref = reference_encode_image(*m, px);
    ASSERT_EQ(got.n_tokens, c.tokens);
    ASSERT_EQ(got.n_tokens, ref.n_tokens);
    ASSERT_EQ(got.n_embd, ref.n_embd);
    EXPECT_EQ(got.grid_x, ref.grid_x);
    EXPECT_EQ(got.grid_y, ref.grid_y);
    EXPECT_LE(nmse(got, ref), 1e-9) << c.name;
}

// Real mmproj files store matrices as F16: they stay F16 in memory and the
// encoder multiplies them as such.
TEST(ReferenceEncoderF16, F16MatricesStayF16AndMatch) {
    test::MmprojSpec spec = test::small_muse_glimmer_mmproj();
    spec.f16_matrices = true;
    const auto m = Mmproj::open(test::write_mmproj(spec, "ref-f16.gguf"));
    EXPECT_EQ(m->tensor("v.blk.0.attn_q.weight").type, ElementType::F16);
    EXPECT_EQ(m->tensor("v.patch_embd.weight").type, ElementType::F16);
    EXPECT_EQ(m->tensor("v.position_embd.weight").type, ElementType::F32);
    const FloatImage px = random_pixels(12, 8, 5);
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    const ImageEmbeddings got = encode_image(*m, px, ops);
    const ImageEmbeddings ref = reference_encode_image(*m, px);
    ASSERT_EQ(got.values.size(), ref.values.size());
    EXPECT_LE(nmse(got, ref), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Families, ReferenceEncoder,
                         ::testing::Values(Case{"gemma3", test::small_gemma3_mmproj, 8, 8, 1},
                                           Case{"mlp", test::small_mlp_mmproj, 6, 6, 9},
                                           Case{"qwen2vl_wide", test::small_qwen2vl_mmproj, 12, 8, 6},
                                           Case{"qwen2vl_tall", test::small_qwen2vl_mmproj, 4, 12, 3},
                                           Case{"muse_glimmer_wide", test::small_muse_glimmer_mmproj, 12, 8, 6},
                                           Case{"muse_glimmer_tall", test::small_muse_glimmer_mmproj, 8, 20, 10},
                                           Case{"muse_glimmer_table_size", test::small_muse_glimmer_mmproj, 4, 4, 1}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace cria::vision
