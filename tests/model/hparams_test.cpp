#include "cria/model/hparams.h"

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

TEST(HParams, Stories260K) {
    auto file = gguf::File::open(test::model_path("stories260K/stories260K.gguf").string());
    const HParams hp = read_hparams(*file);
    EXPECT_EQ(hp.arch, Architecture::Llama);
    EXPECT_EQ(hp.n_vocab, 512u);
    EXPECT_EQ(hp.n_embd, 64u);
    EXPECT_EQ(hp.n_layer, 5u);
    EXPECT_EQ(hp.n_head, 8u);
    EXPECT_EQ(hp.n_head_kv, 4u);
    EXPECT_EQ(hp.head_dim, 8u);
    EXPECT_EQ(hp.n_rot, 8u);
    EXPECT_EQ(hp.n_ff, 172u);
    EXPECT_EQ(hp.n_ctx_train, 2048u);
    EXPECT_EQ(hp.rope_order, RopeOrder::Normal);
    EXPECT_FALSE(hp.tied_output);  // stories260K ships output.weight (equal to the embedding)
    EXPECT_NEAR(hp.norm_rms_eps, 1e-5f, 1e-9f);
}

TEST(HParams, AustenModelsHaveTiedEmbeddings) {
    auto file = gguf::File::open(test::model_path("austen-7m/austen-7m-f16.gguf").string());
    const HParams hp = read_hparams(*file);
    EXPECT_EQ(hp.n_vocab, 4096u);
    EXPECT_EQ(hp.n_embd, 256u);
    EXPECT_EQ(hp.n_layer, 8u);
    EXPECT_EQ(hp.n_head, 8u);
    EXPECT_EQ(hp.n_head_kv, 4u);
    EXPECT_EQ(hp.head_dim, 32u);
    EXPECT_EQ(hp.n_ff, 768u);
    EXPECT_TRUE(hp.tied_output);
}

TEST(HParams, VocabOnlyFileIsRejectedWithAClearError) {
    auto file = gguf::File::open(test::data_path("tokenizer/ggml-vocab-llama-spm.gguf").string());
    try {
        read_hparams(*file);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ggml-vocab-llama-spm.gguf"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace cria::model
