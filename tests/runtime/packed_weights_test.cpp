// Weight packing at load time (Model::load(..., pack_weights)): a model whose
// matrices were copied into the kernels' packed layout computes what the same
// model computes from the file's rows. Each product differs only in the float
// order of its block sums (~1e-7, see tests/matmul/packed_test.cpp), but the
// next layer quantises its activations to 8 bits, and a value that sits on a
// rounding boundary can then round the other way: one quant step, which the
// layers after it carry on. So logits are compared with a bound of 5% of the
// largest logit (a wrongly wired packing is off by about 100%), and top-1
// where the margin is clearly above that. The embedding (read by get_rows)
// stays unpacked and a tied output matrix gets a packed copy.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cria/cpu/features.h"
#include "cria/gguf/file.h"
#include "cria/matmul/packing.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/batch.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

using Rows = std::vector<std::vector<float>>;

// A prompt in one batch, then three single-token steps; every logit row.
Rows run(const model::Model& m, const std::vector<int32_t>& tokens) {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    Context ctx(m, cp);
    Rows out;
    const std::vector<int32_t> prompt(tokens.begin(), tokens.end() - 3);
    EXPECT_EQ(ctx.decode(Batch::from_tokens(prompt, 0, 0, true)), 0);
    for (int32_t i = 0; i < static_cast<int32_t>(prompt.size()); ++i) {
        auto l = ctx.logits(i);
        out.emplace_back(l.begin(), l.end());
    }
    for (size_t i = prompt.size(); i < tokens.size(); ++i) {
        EXPECT_EQ(ctx.decode(Batch::from_tokens({tokens[i]}, static_cast<int32_t>(i), 0, true)), 0);
        auto l = ctx.logits(0);
        out.emplace_back(l.begin(), l.end());
    }
    return out;
}

// Loads `spec` packed and unpacked and compares their logits on random tokens.
void expect_packed_matches_plain(const model::SyntheticModelSpec& spec, const std::string& name) {
    const std::string path = (test::temp_dir() / ("packed-" + name + ".gguf")).string();
    model::write_synthetic_model(spec, path);
    const std::shared_ptr<const gguf::File> file(gguf::File::open(path));
    const auto plain = model::Model::from_file(file, false);
    const auto packed = model::Model::from_file(file, true);
    EXPECT_EQ(plain->packed_bytes(), 0u);
    EXPECT_GT(packed->packed_bytes(), 0u);
    EXPECT_EQ(packed->weights().token_embd.weight_packing, matmul::Packing::None);
    EXPECT_NE(packed->weights().output.w.weight_packing, matmul::Packing::None);
    // Matrices of one input are joined: [q; k; v] and [gate; up] (or the file's own fused ones).
    for (const model::LayerWeights& lw : packed->weights().layers) {
        if (lw.wkv_a_mqa.present()) {
            // Latent attention (deepseek2): its projections are packed one by one.
            EXPECT_NE(lw.wkv_a_mqa.w.weight_packing, matmul::Packing::None);
            EXPECT_NE(lw.wq_b.w.weight_packing, matmul::Packing::None);
        } else {
            EXPECT_NE(lw.wqkv.w.weight_packing, matmul::Packing::None);
        }
        if (lw.down_exps.present()) {
            // Experts: packed expert by expert, each expert's [gate; up] joined.
            EXPECT_NE(lw.down_exps.w.weight_packing, matmul::Packing::None);
            EXPECT_NE(lw.gate_up_exps.w.weight_packing, matmul::Packing::None);
            EXPECT_FALSE(lw.gate_exps.present() || lw.up_exps.present());
            EXPECT_EQ(lw.gate_up_exps.w.ne[1], 2 * lw.down_exps.w.ne[0]);
        } else {
            EXPECT_TRUE(lw.gate_up.w.weight_packing != matmul::Packing::None ||
                        lw.up.w.weight_packing != matmul::Packing::None);
        }
    }

    std::mt19937 rng(5);
    std::vector<int32_t> tokens(24);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
    const Rows a = run(*plain, tokens), b = run(*packed, tokens);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        double scale = 0, diff = 0;
        for (size_t j = 0; j < a[i].size(); ++j) {
            scale = std::max(scale, std::fabs(static_cast<double>(a[i][j])));
            diff = std::max(diff, std::fabs(static_cast<double>(a[i][j]) - b[i][j]));
        }
        EXPECT_TRUE(diff <= 0.05 * scale) << name << " position " << i << ": " << diff << " of " << scale;
        std::vector<float> s = a[i];
        std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<>());
        if (s[0] - s[1] > 0.1 * scale)
            EXPECT_EQ(std::max_element(a[i].begin(), a[i].end()) - a[i].begin(),
                      std::max_element(b[i].begin(), b[i].end()) - b[i].begin())
                << name << " position " << i;
    }
}

class PackedWeights : public ::testing::TestWithParam<ElementType> {};

TEST_P(PackedWeights, SameLogitsAsTheFileLayout) {
    const ElementType type = GetParam();
    if (matmul::preferred_packing(type, cpu::best_isa()) == matmul::Packing::None)
        GTEST_SKIP() << "this CPU's kernels read " << element_type_name(type) << " rows unpacked";
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("llama");
    spec.weight_type = spec.embd_type = type;  // tied output: packed copy of the embedding
    spec.n_vocab = 333;                        // a last packed group of 13 rows
    spec.stddev = 0.08f;
    spec.seed = 21;
    if (type == ElementType::Q4_K || type == ElementType::IQ4_XS) {  // every row a whole number of 256-value super-blocks
        spec.n_embd = 256;
        spec.head_dim = 64;
        spec.n_ff = 512;
    }
    expect_packed_matches_plain(spec, std::string(element_type_name(type)));
}

// Every architecture's blocks with joined matrices (phi3's file has its own
// fused qkv and gate-up matrices; the others get them joined at load).
TEST(PackedWeightsArchitectures, SameLogitsAsTheFileLayout) {
    if (matmul::preferred_packing(ElementType::Q8_0, cpu::best_isa()) == matmul::Packing::None)
        GTEST_SKIP() << "this CPU's kernels read Q8_0 rows unpacked";
    for (const char* arch : {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe", "minimax-m2", "ernie4_5-moe", "gemma2", "gemma3",
                             "phi3", "smollm3", "seed_oss", "mistral3", "granite", "granitemoe", "exaone4", "muse-glimmer",
                             "granite_swa", "gpt-oss", "deepseek2", "glm4moe"}) {
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
        spec.weight_type = spec.embd_type = ElementType::Q8_0;
        spec.stddev = 0.08f;
        spec.seed = 23;
        expect_packed_matches_plain(spec, std::string("arch-") + arch);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedWeights, ::testing::Values(ElementType::Q4_0, ElementType::Q8_0, ElementType::IQ4_NL, ElementType::Q4_K, ElementType::MXFP4,
                                           ElementType::F16, ElementType::BF16, ElementType::IQ4_XS),
                         [](const auto& info) { return std::string(element_type_name(info.param)); });

}  // namespace
}  // namespace cria::runtime
