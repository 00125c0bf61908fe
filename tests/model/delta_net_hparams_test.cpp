// qwen35 / qwen35moe / qwen3next files: the synthetic fixtures load with the
// delta-net shape they were written with, and files whose keys or tensors
// the delta net cannot run are refused with a cria::Error naming the
// problem (never a crash): each case changes one key or drops one tensor of
// a good file.

#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/hparams.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

using gguf::Value;
using gguf::ValueType;

std::string good_file(const std::string& arch) {
    const std::string path = (test::temp_dir() / ("delta-net-keys-" + arch + ".gguf")).string();
    write_synthetic_model(SyntheticModelSpec::tiny(arch), path);
    return path;
}

// A copy of `path` with key `key` set to `value` (removed when empty) and
// tensor `drop` left out.
std::string variant(const std::string& path, const std::string& key, std::optional<Value> value,
                    const std::string& drop = "") {
    auto src = std::shared_ptr<const gguf::File>(gguf::File::open(path));
    gguf::Writer w;
    bool replaced = false;
    for (const auto& [k, v] : src->metadata()) {
        if (k == key) {
            replaced = true;
            if (value) w.add_metadata(k, *value);
        } else {
            w.add_metadata(k, v);
        }
    }
    if (!replaced && value) w.add_metadata(key, *value);
    for (const gguf::TensorInfo& t : src->tensors()) {
        if (t.name == drop) continue;
        const std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        w.add_tensor(t.name, t.type, shape, [src, t] { return src->tensor_data(t); });
    }
    const std::string out = path + ".variant.gguf";
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

TEST(DeltaNetHparams, FixturesLoadWithTheirShape) {
    for (const char* arch : {"qwen35", "qwen35moe", "qwen3next"}) {
        SCOPED_TRACE(arch);
        const std::string path = good_file(arch);
        auto file = gguf::File::open(path);
        const HParams hp = read_hparams(*file);
        EXPECT_EQ(hp.delta_net.conv_kernel, 4u);
        EXPECT_EQ(hp.delta_net.n_k_heads, 2u);
        EXPECT_EQ(hp.delta_net.n_v_heads, 4u);
        EXPECT_EQ(hp.delta_net.grouped_heads, std::string(arch) == "qwen3next");
        EXPECT_EQ(hp.delta_net.layers, (std::vector<bool>{true, false, true, false}));  // full_attention_interval 2
        EXPECT_TRUE(hp.attn_output_gate);
        EXPECT_NO_THROW(Model::load(path));
    }
}

TEST(DeltaNetHparams, RefusesWhatItCannotRun) {
    const std::string qwen35 = good_file("qwen35"), next = good_file("qwen3next");
    expect_refused(variant(qwen35, "qwen35.ssm.time_step_rank", Value::u32(3)), "multiple of");
    expect_refused(variant(qwen35, "qwen35.ssm.group_count", Value::u32(0)), "must be positive");
    expect_refused(variant(qwen35, "qwen35.ssm.inner_size", Value::u32(100)), "inner_size");
    expect_refused(variant(qwen35, "qwen35.ssm.state_size", std::nullopt), "ssm.state_size");
    expect_refused(variant(qwen35, "qwen35.rope.dimension_sections", std::nullopt), "dimension_sections");
    expect_refused(variant(qwen35, "qwen35.rope.dimension_sections",
                           Value::array(ValueType::U32, std::vector<uint32_t>{1, 0, 0, 3})),
                   "dimension_sections");
    expect_refused(variant(qwen35, "qwen35.attention.recurrent_layers",
                           Value::array(ValueType::U32, std::vector<uint32_t>{1, 0, 1})),
                   "one per block");
    expect_refused(variant(qwen35, "qwen35.full_attention_interval", Value::u32(0)), "must be positive");
    expect_refused(variant(qwen35, "qwen35.nextn_predict_layers", Value::u32(4)), "nextn_predict_layers");
    expect_refused(variant(qwen35, "", std::nullopt, "blk.0.ssm_conv1d.weight"), "ssm_conv1d");
    expect_refused(variant(qwen35, "", std::nullopt, "blk.1.attn_q.weight"), "attn_q");
    // A layer made a delta net by its flag but holding attention tensors.
    expect_refused(variant(qwen35, "qwen35.attention.recurrent_layers",
                           Value::array(ValueType::U32, std::vector<uint32_t>{1, 1, 1, 0})),
                   "attn_qkv");
    expect_refused(variant(next, "", std::nullopt, "blk.0.ffn_up_exps.weight"), "ffn_gate_up_exps");
}

}  // namespace
}  // namespace cria::model
