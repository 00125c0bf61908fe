// deepseek2's (and glm4moe's) hyperparameters: what a file with multi-head latent attention
// and expert groups reads as, and the refusals (a cria::Error naming the
// key) of files whose shapes or keys it cannot run.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/hparams.h"
#include "cria/model/synthetic_model.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

using gguf::Value;

std::string tiny_deepseek2() {
    const std::string path = (test::temp_dir() / "hparams-deepseek2.gguf").string();
    write_synthetic_model(SyntheticModelSpec::tiny("deepseek2"), path);
    return path;
}

// A copy of `src` with some keys replaced (nullopt: removed) or added.
std::string rewritten(const std::string& src, const std::map<std::string, std::optional<Value>>& changes,
                      const std::string& name) {
    const auto file = gguf::File::open(src);
    gguf::Writer w;
    for (const auto& [key, value] : file->metadata()) {
        const auto it = changes.find(key);
        if (it == changes.end())
            w.add_metadata(key, value);
        else if (it->second)
            w.add_metadata(key, *it->second);
    }
    for (const auto& [key, value] : changes)
        if (value && !file->find(key)) w.add_metadata(key, *value);
    for (const gguf::TensorInfo& t : file->tensors()) {
        const std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        const std::span<const uint8_t> bytes = file->tensor_data(t);
        w.add_tensor(t.name, t.type, shape, [bytes] { return bytes; });
    }
    const std::string path = (test::temp_dir() / (name + ".gguf")).string();
    w.write(path);
    return path;
}

void expect_refused(const std::string& path, const std::string& key) {
    try {
        read_hparams(*gguf::File::open(path));
        FAIL() << "expected an error about " << key;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
}

TEST(Deepseek2HParams, LatentAttentionAndExpertGroups) {
    const HParams hp = read_hparams(*gguf::File::open(tiny_deepseek2()));
    EXPECT_TRUE(hp.mla_absorbed);
    EXPECT_TRUE(hp.value_in_key);
    EXPECT_EQ(hp.n_lora_q, 64u);
    EXPECT_EQ(hp.n_lora_kv, 32u);
    EXPECT_EQ(hp.n_rot, 16u);
    EXPECT_EQ(hp.head_dim, 48u);    // the cached row: latent + roped part
    EXPECT_EQ(hp.head_dim_v, 32u);  // the latent
    EXPECT_EQ(hp.head_dim_mla, 48u);
    EXPECT_EQ(hp.head_dim_v_mla, 32u);
    EXPECT_EQ(hp.n_head_kv, 1u);
    EXPECT_FLOAT_EQ(hp.attention_scale, 1.0f / std::sqrt(48.0f));  // 1 / sqrt(key_length_mla), no YaRN
    EXPECT_EQ(hp.expert_group_count, 4u);
    EXPECT_EQ(hp.expert_group_used, 2u);
    EXPECT_EQ(hp.expert_gating, ExpertGating::Sigmoid);
    EXPECT_TRUE(hp.expert_weights_norm);
    EXPECT_FLOAT_EQ(hp.expert_weights_scale, 2.5f);
    EXPECT_EQ(hp.n_ff_shexp, 64u);
    EXPECT_FALSE(hp.is_moe(0));
    EXPECT_TRUE(hp.is_moe(1));
}

TEST(Deepseek2HParams, LinearRopeScalingScalesTheScores) {
    // llama.cpp's graph: mscale = attn_factor (1 + 0.1 ln f)(1 + 0.1 ylm ln f), kq = mscale^2 / sqrt(dqk).
    const std::string path = rewritten(tiny_deepseek2(),
                                       {{"deepseek2.rope.scaling.type", Value::string("linear")},
                                        {"deepseek2.rope.scaling.factor", Value::f32(4.0f)},
                                        {"deepseek2.rope.scaling.yarn_log_multiplier", Value::f32(0.1f)}},
                                       "hparams-deepseek2-linear");
    const HParams hp = read_hparams(*gguf::File::open(path));
    const double m = (1 + 0.1 * std::log(4.0)) * (1 + 0.1 * std::log(4.0));
    EXPECT_NEAR(hp.attention_scale, m * m / std::sqrt(48.0), 1e-6);
}

TEST(Deepseek2HParams, RefusesWhatItCannotRun) {
    const std::string src = tiny_deepseek2();
    expect_refused(rewritten(src, {{"deepseek2.attention.kv_lora_rank", Value::u32(0)}}, "ds2-no-latent"),
                   "kv_lora_rank");
    expect_refused(rewritten(src, {{"deepseek2.attention.kv_lora_rank", std::nullopt}}, "ds2-no-latent-key"),
                   "kv_lora_rank");
    // The cached row must be latent + roped part.
    expect_refused(rewritten(src, {{"deepseek2.attention.key_length", Value::u32(40)}}, "ds2-bad-key-length"),
                   "key_length");
    expect_refused(rewritten(src, {{"deepseek2.attention.key_length_mla", Value::u32(16)}}, "ds2-no-unroped"),
                   "key_length_mla");
    expect_refused(rewritten(src, {{"deepseek2.expert_group_count", Value::u32(3)}}, "ds2-bad-groups"),
                   "expert_group_count");
    expect_refused(rewritten(src, {{"deepseek2.expert_group_used_count", Value::u32(0)}}, "ds2-no-groups-used"),
                   "expert_group_used_count");
    expect_refused(rewritten(src, {{"deepseek2.expert_shared_count", Value::u32(0)}}, "ds2-no-shared"),
                   "expert_shared_count");
    expect_refused(rewritten(src, {{"deepseek2.attention.temperature_scale", Value::f32(0.5f)}}, "ds2-temperature"),
                   "temperature_scale");
    expect_refused(rewritten(src, {{"deepseek2.expert_gating_func", Value::u32(7)}}, "ds2-gating"),
                   "expert_gating_func");
    // YaRN, which the common reader accepts since gpt-oss, is not followed
    // for deepseek2's pre-scaled scores yet.
    expect_refused(rewritten(src,
                             {{"deepseek2.rope.scaling.type", Value::string("yarn")},
                              {"deepseek2.rope.scaling.factor", Value::f32(40.0f)}},
                             "ds2-yarn"),
                   "yarn");
}

// glm4moe, the other family of this file's routing: M-RoPE from
// rope.dimension_sections, sigmoid by default, and its refusals.
TEST(Glm4MoeHParams, MRopeSectionsAndRefusals) {
    const std::string src = (test::temp_dir() / "hparams-glm4moe.gguf").string();
    write_synthetic_model(SyntheticModelSpec::tiny("glm4moe"), src);
    const HParams hp = read_hparams(*gguf::File::open(src));
    EXPECT_EQ(hp.rope_order, RopeOrder::MRope);
    EXPECT_EQ(hp.rope_sections[0], 1);
    EXPECT_EQ(hp.n_rot, 8u);
    EXPECT_EQ(hp.expert_gating, ExpertGating::Sigmoid);
    EXPECT_TRUE(hp.has_qk_norm);
    // Sections without t and h: plain NeoX rope, as llama.cpp's use_mrope().
    const std::vector<int32_t> no_h{4, 0, 0, 0};
    const HParams neox = read_hparams(*gguf::File::open(rewritten(
        src, {{"glm4moe.rope.dimension_sections", Value::array(gguf::ValueType::I32, no_h)}}, "glm4moe-neox")));
    EXPECT_EQ(neox.rope_order, RopeOrder::NeoX);
    const std::vector<int32_t> three{1, 1, 1};
    expect_refused(rewritten(src, {{"glm4moe.rope.dimension_sections", Value::array(gguf::ValueType::I32, three)}},
                             "glm4moe-3-sections"),
                   "rope.dimension_sections");
    expect_refused(rewritten(src, {{"glm4moe.expert_shared_count", Value::u32(0)}}, "glm4moe-no-shared"),
                   "expert_shared_count");
    expect_refused(rewritten(src, {{"glm4moe.expert_shared_count", std::nullopt}}, "glm4moe-no-shared-key"),
                   "expert_shared_count");
}

}  // namespace
}  // namespace cria::model
