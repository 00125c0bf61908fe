#include "cria/model/synthetic_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/hparams.h"
#include "cria/model/reference_forward.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

TEST(SyntheticModel, TinyFixturesLoadWithTheirHyperparameters) {
    for (const char* arch : {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe", "minimax-m2", "ernie4_5-moe", "gemma2", "gemma3",
                             "phi3", "smollm3", "seed_oss", "mistral3", "granite", "granitemoe", "exaone4", "muse-glimmer",
                             "granite_swa", "deepseek2", "glm4moe",
                             "qwen35", "qwen35moe", "qwen3next"}) {
        SCOPED_TRACE(arch);
        const SyntheticModelSpec spec = SyntheticModelSpec::tiny(arch);
        const std::string path = (test::temp_dir() / (std::string(arch) + ".gguf")).string();
        write_synthetic_model(spec, path);
        auto file = gguf::File::open(path);
        const HParams hp = read_hparams(*file);
        EXPECT_EQ(hp.arch_name, arch);
        EXPECT_EQ(hp.n_vocab, spec.n_vocab);
        EXPECT_EQ(hp.n_layer, spec.n_layer);
        // deepseek2 caches one KV head [latent (2 head_dim) | roped part (head_dim)].
        const bool mla = std::string(arch) == "deepseek2";
        EXPECT_EQ(hp.n_head_kv, mla ? 1u : spec.n_head_kv);
        EXPECT_EQ(hp.head_dim, mla ? 3 * spec.head_dim : spec.head_dim);
        EXPECT_EQ(hp.tied_output, spec.tied_output);
        EXPECT_EQ(vocab::Vocab::from_gguf(*file).size(), spec.n_vocab);
        // The reference forward runs on it and gives finite, distinct logits.
        // (12 tokens: longer than the sliding window of the gemma fixtures.)
        const std::vector<int32_t> tokens = {1, 100, 200, 7, 300, 301, 5, 9, 17, 250, 260, 3};
        const auto logits = reference_forward(*file, tokens);
        ASSERT_EQ(logits.size(), tokens.size());
        for (const auto& row : logits)
            for (float v : row) ASSERT_TRUE(std::isfinite(v));
        EXPECT_NE(logits[1], logits[2]);
    }
}

TEST(SyntheticModel, SameSpecGivesSameFileAndSeedChangesIt) {
    SyntheticModelSpec spec = SyntheticModelSpec::tiny("llama");
    spec.weight_type = ElementType::Q8_0;
    const auto a = (test::temp_dir() / "a.gguf").string(), b = (test::temp_dir() / "b.gguf").string(),
               c = (test::temp_dir() / "c.gguf").string();
    write_synthetic_model(spec, a);
    write_synthetic_model(spec, b);
    spec.seed = 2;
    write_synthetic_model(spec, c);
    auto fa = gguf::File::open(a), fb = gguf::File::open(b), fc = gguf::File::open(c);
    const auto* ta = fa->find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ta->type, ElementType::Q8_0);
    const auto da = fa->tensor_data(*ta), db = fb->tensor_data(*fb->find_tensor("blk.0.attn_q.weight")),
               dc = fc->tensor_data(*fc->find_tensor("blk.0.attn_q.weight"));
    EXPECT_TRUE(std::equal(da.begin(), da.end(), db.begin(), db.end()));
    EXPECT_FALSE(std::equal(da.begin(), da.end(), dc.begin(), dc.end()));
}

TEST(SyntheticModel, UnknownArchitectureIsAnError) {
    SyntheticModelSpec spec = SyntheticModelSpec::tiny("llama");
    spec.arch = "mamba";
    EXPECT_THROW(write_synthetic_model(spec, (test::temp_dir() / "m.gguf").string()), Error);
}

}  // namespace
}  // namespace cria::model
