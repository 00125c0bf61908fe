#include "cria/model/hparams.h"
#include "cria/model/synthetic_model.h"

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

TEST(HParams, Stories260K) {
    auto file = gguf::File::open(test::model_path("stories260K/stories260K.gguf").string());
    const HParams hp = read_hparams(*file);
    EXPECT_EQ(hp.arch_name, "llama");
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

namespace cria::model {
namespace {

HParams hparams_of(const SyntheticModelSpec& spec) {
    const std::string path = (test::temp_dir() / (spec.name + ".gguf")).string();
    write_synthetic_model(spec, path);
    return read_hparams(*gguf::File::open(path));
}

TEST(HParams, GemmaFamiliesFollowLlamaCpp) {
    const HParams g2 = hparams_of(SyntheticModelSpec::tiny("gemma2"));
    EXPECT_EQ(g2.rope_order, RopeOrder::NeoX);
    EXPECT_EQ(g2.n_swa, 8u);
    // Every other layer slides, starting with layer 0.
    EXPECT_EQ(g2.swa_layers, (std::vector<bool>{true, false, true}));
    EXPECT_FLOAT_EQ(g2.attn_softcap, 50.0f);
    EXPECT_FLOAT_EQ(g2.final_softcap, 30.0f);
    EXPECT_TRUE(g2.scale_embeddings);
    EXPECT_TRUE(g2.has_post_norms);
    EXPECT_EQ(g2.ffn_activation, FfnActivation::GeluTanh);
    EXPECT_FLOAT_EQ(g2.attention_scale, 0.25f);  // 1/sqrt(head_dim 16)

    SyntheticModelSpec spec = SyntheticModelSpec::tiny("gemma3");
    spec.n_layer = 7;
    const HParams g3 = hparams_of(spec);
    // Five local layers, then a global one.
    EXPECT_EQ(g3.swa_layers, (std::vector<bool>{true, true, true, true, true, false, true}));
    EXPECT_TRUE(g3.has_qk_norm);
    EXPECT_FLOAT_EQ(g3.rope_freq_base_swa, 10000.0f);
    EXPECT_FLOAT_EQ(g3.final_softcap, 0.0f);
}

TEST(HParams, Phi3UsesFusedTensorsAndNoSlidingWindow) {
    const HParams hp = hparams_of(SyntheticModelSpec::tiny("phi3"));
    EXPECT_TRUE(hp.fused_qkv);
    EXPECT_TRUE(hp.fused_gate_up);
    EXPECT_EQ(hp.n_swa, 0u);
    EXPECT_FALSE(hp.is_swa(0));
    EXPECT_FALSE(hp.tied_output);
}

TEST(HParams, Smollm3HasNoRopeOnEveryFourthLayer) {
    const HParams hp = hparams_of(SyntheticModelSpec::tiny("smollm3"));
    EXPECT_EQ(hp.nope_layers, (std::vector<bool>{false, false, false, true}));
    EXPECT_TRUE(hp.uses_rope(0));
    EXPECT_FALSE(hp.uses_rope(3));
}

TEST(HParams, GraniteReadsItsScales) {
    const HParams hp = hparams_of(SyntheticModelSpec::tiny("granite"));
    EXPECT_FLOAT_EQ(hp.embedding_scale, 3.0f);
    EXPECT_FLOAT_EQ(hp.residual_scale, 0.5f);
    EXPECT_FLOAT_EQ(hp.logit_multiplier, 0.5f);  // logit_scale 2 divides
    EXPECT_FLOAT_EQ(hp.attention_scale, 0.2f);
    EXPECT_TRUE(hp.uses_rope(0));  // rope.scaling.finetuned absent: true
}

TEST(HParams, MuseGlimmerSlidesAndRopesByItsPattern) {
    const HParams hp = hparams_of(SyntheticModelSpec::tiny("muse-glimmer"));
    // The converter's bool array: layers 0 and 2 slide and rope, layer 1 is global without rope.
    EXPECT_EQ(hp.n_swa, 8u);
    EXPECT_EQ(hp.swa_layers, (std::vector<bool>{true, false, true}));
    EXPECT_EQ(hp.nope_layers, (std::vector<bool>{false, true, false}));
    EXPECT_EQ(hp.rope_order, RopeOrder::Normal);
    EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, 5000.0f);
    EXPECT_FLOAT_EQ(hp.rope_freq_scale_swa, 1.0f);
    EXPECT_FLOAT_EQ(hp.logit_multiplier, 0.75f);  // logit_scale multiplies here
    EXPECT_FLOAT_EQ(hp.final_softcap, 4.0f);
    EXPECT_FLOAT_EQ(hp.post_norm_eps, 1e-8f);
    EXPECT_TRUE(hp.has_qk_norm);

    SyntheticModelSpec spec = SyntheticModelSpec::tiny("muse-glimmer");
    spec.name = "muse-glimmer-period";
    spec.n_layer = 4;
    spec.swa_pattern = 2;  // a scalar is a period: the first of every two layers slides
    EXPECT_EQ(hparams_of(spec).swa_layers, (std::vector<bool>{true, false, true, false}));
    spec.name = "muse-glimmer-no-pattern";
    spec.swa_pattern = 0;  // absent: no sliding-window layer, hence no rope anywhere
    const HParams none = hparams_of(spec);
    EXPECT_EQ(none.swa_layers, (std::vector<bool>(4, false)));
    EXPECT_EQ(none.nope_layers, (std::vector<bool>(4, true)));

    spec.name = "muse-glimmer-no-window";
    spec.swa_pattern = -1;
    spec.sliding_window = 0;  // the key is required
    try {
        hparams_of(spec);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("muse-glimmer.attention.sliding_window"), std::string::npos) << e.what();
    }
}

TEST(HParams, GraniteSwaReadsItsLayerPatterns) {
    const HParams hp = hparams_of(SyntheticModelSpec::tiny("granite_swa"));
    EXPECT_EQ(hp.n_swa, 8u);
    EXPECT_EQ(hp.swa_layers, (std::vector<bool>{true, false, true, false}));
    EXPECT_EQ(hp.nope_layers, (std::vector<bool>{false, false, false, true}));  // attention.rope_pattern
    EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, hp.rope_freq_base);  // every layer ropes alike
    EXPECT_FLOAT_EQ(hp.logit_multiplier, 0.5f);
    EXPECT_FLOAT_EQ(hp.residual_scale, 0.5f);

    SyntheticModelSpec spec = SyntheticModelSpec::tiny("granite_swa");
    spec.name = "granite-swa-scalar";
    spec.swa_pattern = 1;  // a scalar is copied to every layer (not a period)
    EXPECT_EQ(hparams_of(spec).swa_layers, (std::vector<bool>(4, true)));

    spec.name = "granite-swa-no-pattern";
    spec.swa_pattern = 0;  // the key is required
    try {
        hparams_of(spec);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("granite_swa.attention.sliding_window_pattern"), std::string::npos) << e.what();
    }
}

TEST(HParams, Exaone4SlidesOnlyWithA64LayerTrunk) {
    SyntheticModelSpec spec = SyntheticModelSpec::tiny("exaone4");
    spec.sliding_window = 8;
    const HParams small = hparams_of(spec);  // 3 layers: no window, rope everywhere
    EXPECT_FALSE(small.is_swa(0));
    EXPECT_TRUE(small.uses_rope(2));
    EXPECT_TRUE(small.has_qk_norm);
    EXPECT_EQ(small.rope_order, RopeOrder::NeoX);

    spec.n_layer = 64;
    spec.name = "exaone4-64";
    const HParams big = hparams_of(spec);  // the 32B's pattern: 3 of every 4 layers slide, the others have no rope
    EXPECT_EQ(big.n_swa, 8u);
    for (uint32_t l = 0; l < 64; ++l) {
        EXPECT_EQ(big.is_swa(l), l % 4 != 3) << l;
        EXPECT_EQ(big.uses_rope(l), l % 4 != 3) << l;
    }

    // EXAONE 4.5: block_count 65 counts one MTP layer; the trunk still has 64 and slides.
    spec.n_nextn = 1;
    spec.name = "exaone4-64-mtp";
    const HParams mtp = hparams_of(spec);
    EXPECT_EQ(mtp.n_layer, 64u);
    EXPECT_EQ(mtp.n_layer_nextn, 1u);
    EXPECT_EQ(mtp.swa_layers, big.swa_layers);
    EXPECT_EQ(mtp.nope_layers, big.nope_layers);
}

TEST(HParams, GptOssRoutesOnRawLogitsAndSlidesOnEvenLayers) {
    SyntheticModelSpec spec = SyntheticModelSpec::tiny("gpt-oss");
    const HParams hp = hparams_of(spec);
    EXPECT_EQ(hp.rope_order, RopeOrder::NeoX);
    EXPECT_EQ(hp.n_swa, 8u);
    EXPECT_EQ(hp.swa_layers, (std::vector<bool>{true, false, true}));  // period 2 when the key is absent
    EXPECT_EQ(hp.expert_gating, ExpertGating::SoftmaxWeight);
    EXPECT_FALSE(hp.expert_weights_norm);
    EXPECT_EQ(hp.expert_activation, FfnActivation::SwigluOai);
    EXPECT_EQ(hp.n_ff_exp, 64u);
    EXPECT_EQ(hp.rope_yarn_ext_factor, 0.0f);  // no rope scaling keys: plain rope

    // llama.cpp requires the window; a file without it is refused by name.
    spec.sliding_window = 0;
    spec.name = "gpt-oss-no-window";
    try {
        hparams_of(spec);
        ADD_FAILURE() << "a gpt-oss file without attention.sliding_window was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("gpt-oss.attention.sliding_window"), std::string::npos) << e.what();
    }
}

// gpt-oss's released files: rope.scaling.type "yarn", factor 32, original
// context 4096. llama.cpp then sets ext_factor 1 and an attn_factor whose
// YaRN gain (1 + 0.1 ln 32) cancels the one ggml's rope multiplies in.
TEST(HParams, YarnScalingFollowsLlamaCppsContextSetup) {
    SyntheticModelSpec spec = SyntheticModelSpec::tiny("gpt-oss");
    spec.name = "gpt-oss-yarn";
    spec.rope_yarn_factor = 32.0f;
    const HParams hp = hparams_of(spec);
    EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f / 32.0f);
    EXPECT_FLOAT_EQ(hp.rope_freq_scale_swa, 1.0f / 32.0f);
    EXPECT_EQ(hp.rope_yarn_ext_factor, 1.0f);
    EXPECT_EQ(hp.n_ctx_orig, 4096u);
    EXPECT_FLOAT_EQ(hp.rope_attn_factor, 1.0f);
    EXPECT_EQ(hp.rope_yarn_beta_fast, 32.0f);
    EXPECT_EQ(hp.rope_yarn_beta_slow, 1.0f);
}

}  // namespace
}  // namespace cria::model
