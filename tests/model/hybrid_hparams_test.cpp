// falcon-h1 and minimax-01 files (llama.cpp's fixtures): they load with the
// layer layout llama.cpp gives them, and files whose keys or tensors cannot
// run are refused with a cria::Error naming the problem (never a crash):
// each case changes one key or drops one tensor of a good file. Also the
// lightning layers' decay rates as llama.cpp computes them.

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/hparams.h"
#include "cria/model/model.h"
#include "model/lightning_block.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

using gguf::Value;
using gguf::ValueType;

std::string fixture(const std::string& name) {
    const auto dir = test::arch_fixtures_dir();
    return dir.empty() ? "" : (dir / (name + ".gguf")).string();
}

// A copy of `path` with key `key` set to `value` (removed when empty) and
// tensor `drop` left out.
std::string variant(const std::string& path, const std::string& key, std::optional<Value> value,
                    const std::string& drop = "") {
    auto src = std::shared_ptr<const gguf::File>(gguf::File::open(path));
    gguf::Writer w;
    for (const auto& [k, v] : src->metadata()) {
        if (k != key) {
            w.add_metadata(k, v);
        } else if (value) {
            w.add_metadata(k, *value);
        }
    }
    for (const gguf::TensorInfo& t : src->tensors()) {
        if (t.name == drop) continue;
        const std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        w.add_tensor(t.name, t.type, shape, [src, t] { return src->tensor_data(t); });
    }
    const std::string out = (test::temp_dir() / "hybrid-hparams-variant.gguf").string();
    w.write(out);
    return out;
}

void expect_refused(const std::string& path, const std::string& words) {
    try {
        Model::load(path);
        ADD_FAILURE() << "loaded; expected an error mentioning '" << words << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

#define SKIP_WITHOUT(path) \
    if (path.empty()) GTEST_SKIP() << "llama.cpp's architecture fixtures are not here"

TEST(HybridHparams, FalconH1LayersAttendAndKeepAState) {
    const std::string path = fixture("falcon-h1-dense");
    SKIP_WITHOUT(path);
    const HParams hp = read_hparams(*gguf::File::open(path));
    EXPECT_TRUE(hp.recurrent_with_attention);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        EXPECT_TRUE(hp.is_recurrent(l));
        EXPECT_TRUE(hp.has_attention(l));
    }
    EXPECT_EQ(hp.recurrent_conv_floats, 3u * (128 + 2 * 2 * 128));  // (K - 1)(d_inner + 2 G N)
    EXPECT_EQ(hp.recurrent_state_floats, 128u * 128);              // N d_inner
    EXPECT_FALSE(hp.fused_qkv);
}

TEST(HybridHparams, FalconH1RefusesWhatItCannotRun) {
    const std::string path = fixture("falcon-h1-dense");
    SKIP_WITHOUT(path);
    expect_refused(variant(path, "falcon-h1.attention.head_count_kv", Value::u32(0)), "head_count_kv");
    expect_refused(variant(path, "falcon-h1.ssm.group_count", Value::u32(3)), "group_count");
    expect_refused(variant(path, "falcon-h1.ssm.state_size", std::nullopt), "ssm.state_size");
    expect_refused(variant(path, "", std::nullopt, "blk.1.attn_k.weight"), "attn_k");
    expect_refused(variant(path, "", std::nullopt, "blk.0.ssm_in.weight"), "ssm_in");
    expect_refused(variant(path, "", std::nullopt, "blk.0.ffn_norm"), "ffn_norm");
    // ssm_norm is optional (absent: no grouped norm), as in llama.cpp.
    EXPECT_NO_THROW(Model::load(variant(path, "", std::nullopt, "blk.0.ssm_norm.weight")));
}

TEST(HybridHparams, Minimax01LightningLayersKeepTheirState) {
    const std::string path = fixture("minimax-01-moe");
    SKIP_WITHOUT(path);
    const HParams hp = read_hparams(*gguf::File::open(path));
    EXPECT_EQ(hp.recurrent_layers, (std::vector<bool>{true, false}));
    EXPECT_FALSE(hp.recurrent_with_attention);
    EXPECT_EQ(hp.recurrent_conv_floats, 0u);
    EXPECT_EQ(hp.recurrent_state_floats, 16u * 16 * 4);  // head_dim² per head
    EXPECT_NEAR(hp.normed_input_residual, 3.55655885f, 1e-6);
    // Layer 0's lightning attn_qkv does not make layer 1's attention fused.
    EXPECT_FALSE(hp.fused_qkv);
}

TEST(HybridHparams, Minimax01RefusesWhatItCannotRun) {
    const std::string path = fixture("minimax-01-moe");
    SKIP_WITHOUT(path);
    expect_refused(variant(path, "minimax-01.residual_scale", std::nullopt), "residual_scale");
    expect_refused(variant(path, "minimax-01.expert_count", Value::u32(0)), "expert_count");
    expect_refused(variant(path, "minimax-01.attention.recurrent_layers",
                           Value::array(ValueType::U32, std::vector<uint32_t>{1, 0, 1})),
                   "one per block");
    expect_refused(variant(path, "minimax-01.attention.value_length", Value::u32(8)), "value_length");
    expect_refused(variant(path, "", std::nullopt, "blk.0.attn_qkv.weight"), "attn_qkv");
    expect_refused(variant(path, "", std::nullopt, "blk.0.attn_norm_2.weight"), "attn_norm_2");
    expect_refused(variant(path, "", std::nullopt, "blk.1.attn_q.weight"), "attn_q");
    // Both layers lightning: layer 1 has no attn_qkv.
    expect_refused(variant(path, "minimax-01.attention.recurrent_layers",
                           Value::array(ValueType::U32, std::vector<uint32_t>{1, 1})),
                   "attn_qkv");
}

TEST(HybridHparams, LightningDecayRatesFollowLlamaCpp) {
    HParams hp;
    hp.n_head = 8;  // slopes 2^(-(h + 1))
    hp.n_layer = 3;
    const std::vector<float> first = blocks::lightning_decay_rates(hp, 0), last = blocks::lightning_decay_rates(hp, 2);
    const std::vector<float> middle = blocks::lightning_decay_rates(hp, 1);
    ASSERT_EQ(first.size(), 8u);
    for (uint32_t h = 0; h < 8; ++h) {
        const double slope = std::pow(2.0, -(h + 1.0));
        EXPECT_NEAR(first[h], slope * (1 + 1e-5), 1e-6 * slope);
        EXPECT_NEAR(middle[h], slope * (0.5 + 1e-5), 1e-6 * slope);
        EXPECT_NEAR(last[h], slope * 1e-5, 1e-6 * slope);  // the last layer barely forgets
    }
    hp.n_head = 4;  // slopes 2^(-2 (h + 1))
    EXPECT_NEAR(blocks::lightning_decay_rates(hp, 0)[1], 0.0625 * (1 + 1e-5), 1e-8);
    hp.n_layer = 1;
    EXPECT_THROW(blocks::lightning_decay_rates(hp, 0), Error);
}

}  // namespace
}  // namespace cria::model
