// LoRA adapters at run time: a synthetic llama base and adapters whose
// merged model (W' = W + s·B·A, written as a plain model here) is known.
// The base with its adapters gives the merged model's logits (packed weights,
// where q/k/v and gate/up are joined, and plain ones), scale 0 gives the base,
// two adapters add up; hostile adapter files are refused with clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/lora_files.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

using test::AdapterSpec;
using test::AdapterTensor;
using test::bytes_of;
using test::random_pair;
using test::write_adapter;
using test::write_merged;


ContextParams params() {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    return cp;
}

const std::vector<TokenId> kTokens = {1, 17, 250, 3, 99, 311, 8, 42};  // the tiny vocabulary has 320

// Logits of every position (one prefill).
std::vector<float> logits(const model::Model& m, const model::LoraSet* lora = nullptr) {
    Context ctx(m, params());
    if (lora) ctx.set_lora(*lora);
    Batch b;
    for (size_t i = 0; i < kTokens.size(); ++i) b.add(kTokens[i], static_cast<int32_t>(i), {0}, true);
    EXPECT_EQ(ctx.decode(b), 0);
    std::vector<float> out;
    for (size_t i = 0; i < kTokens.size(); ++i) {
        const auto row = ctx.logits(static_cast<int32_t>(i));
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

double max_abs_diff(const std::vector<float>& x, const std::vector<float>& y) {
    EXPECT_EQ(x.size(), y.size());
    double m = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
    return m;
}

class Lora : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = test::temp_dir() / "lora";
        std::filesystem::create_directories(dir_);
        base_path_ = (dir_ / "base.gguf").string();
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("llama");
        spec.weight_type = ElementType::F32;
        model::write_synthetic_model(spec, base_path_);
        base_file_ = gguf::File::open(base_path_);
        one_.alpha = 8.0f;  // rank 4: each term scaled by 2 x the user's scale
        one_.tensors = {random_pair(*base_file_, "blk.0.attn_q.weight", 4, 1),
                        random_pair(*base_file_, "blk.0.attn_v.weight", 4, 2),
                        random_pair(*base_file_, "blk.1.ffn_gate.weight", 4, 3),
                        random_pair(*base_file_, "blk.1.ffn_down.weight", 4, 4),
                        random_pair(*base_file_, "blk.1.attn_output.weight", 4, 5)};
        two_.tensors = {random_pair(*base_file_, "blk.0.attn_q.weight", 2, 6),
                        random_pair(*base_file_, "blk.1.ffn_up.weight", 3, 7),
                        random_pair(*base_file_, "blk.0.attn_k.weight", 2, 8)};
        write_adapter(one_, path("one.gguf"));
        write_adapter(two_, path("two.gguf"));
    }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    std::filesystem::path dir_;
    std::string base_path_;
    std::unique_ptr<gguf::File> base_file_;
    AdapterSpec one_, two_;
};

TEST_F(Lora, AdapterGivesTheMergedModelsLogits) {
    write_merged(*base_file_, {{&one_, 0.7f}}, path("merged-one.gguf"));
    auto merged = model::Model::load(path("merged-one.gguf"));
    const std::vector<float> expected = logits(*merged);
    for (bool packed : {true, false}) {  // packed: q/k/v and gate/up joined at load
        SCOPED_TRACE(packed ? "packed" : "plain");
        auto base = model::Model::load(base_path_, gguf::LoadMode::Auto, packed);
        auto adapter = model::LoraAdapter::load(path("one.gguf"), *base);
        EXPECT_EQ(adapter->pairs().size(), 5u);
        EXPECT_FLOAT_EQ(adapter->scale_for(0.7f, 4), 1.4f);
        model::LoraSet set;
        set.add(*adapter, 0.7f);
        const std::vector<float> got = logits(*base, &set);
        const double base_diff = max_abs_diff(logits(*base), expected);
        EXPECT_GT(base_diff, 0.05);  // the adapter changes the output visibly
        EXPECT_LT(max_abs_diff(got, expected), 1e-4 * std::max(1.0, base_diff)) << "base differs by " << base_diff;
    }
}

TEST_F(Lora, ScaleZeroIsTheBase) {
    auto base = model::Model::load(base_path_);
    auto adapter = model::LoraAdapter::load(path("one.gguf"), *base);
    model::LoraSet set;
    set.add(*adapter, 0.0f);
    EXPECT_TRUE(set.empty());
    EXPECT_EQ(logits(*base, &set), logits(*base));
}

TEST_F(Lora, TwoAdaptersAddUp) {
    write_merged(*base_file_, {{&one_, 1.0f}, {&two_, -0.5f}}, path("merged-two.gguf"));
    auto merged = model::Model::load(path("merged-two.gguf"));
    auto base = model::Model::load(base_path_);
    auto a1 = model::LoraAdapter::load(path("one.gguf"), *base);
    auto a2 = model::LoraAdapter::load(path("two.gguf"), *base);
    model::LoraSet set;
    set.add(*a1, 1.0f);
    set.add(*a2, -0.5f);
    const std::vector<float> expected = logits(*merged);
    const double base_diff = max_abs_diff(logits(*base), expected);
    EXPECT_LT(max_abs_diff(logits(*base, &set), expected), 1e-4 * std::max(1.0, base_diff));
}

// Cells computed with adapters are not the base model's: a saved state
// names the adapters and scales, and restores only under the same ones.
TEST_F(Lora, SavedStatesNameTheirAdapters) {
    auto base = model::Model::load(base_path_);
    auto adapter = model::LoraAdapter::load(path("one.gguf"), *base);
    model::LoraSet set;
    set.add(*adapter, 0.5f);
    Context with(*base, params());
    with.set_lora(set);
    Batch b;
    for (size_t i = 0; i < 4; ++i) b.add(kTokens[i], static_cast<int32_t>(i), {0}, i == 3);
    ASSERT_EQ(with.decode(b), 0);
    const std::vector<TokenId> saved(kTokens.begin(), kTokens.begin() + 4);
    with.save_sequence(0, saved, path("with-lora.seq"));
    Context plain(*base, params());
    EXPECT_THROW(plain.restore_sequence(0, path("with-lora.seq")), Error);
    EXPECT_EQ(plain.memory_seq_pos_max(0), -1);
    Context other_scale(*base, params());
    model::LoraSet doubled;
    doubled.add(*adapter, 1.0f);
    other_scale.set_lora(doubled);
    EXPECT_THROW(other_scale.restore_sequence(0, path("with-lora.seq")), Error);
    Context same(*base, params());
    same.set_lora(set);
    EXPECT_EQ(same.restore_sequence(0, path("with-lora.seq")), saved);
}

TEST_F(Lora, HostileAdaptersAreRefused) {
    auto base = model::Model::load(base_path_);
    auto refused = [&](const AdapterSpec& spec, const std::string& why) {
        SCOPED_TRACE(why);
        write_adapter(spec, path("bad.gguf"));
        try {
            model::LoraAdapter::load(path("bad.gguf"), *base);
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    AdapterSpec s = one_;
    s.general_type = "model";
    refused(s, "not a LoRA adapter");
    s = one_;
    s.arch = "qwen2";
    refused(s, "architecture 'qwen2'");
    s = one_;
    s.tensors[0].n_in -= 1;  // lora_a one column short of the base matrix
    s.tensors[0].a.resize(static_cast<size_t>(s.tensors[0].n_in * s.tensors[0].rank));
    refused(s, "do not fit the base matrix");
    s = one_;
    s.tensors[0].base = "blk.7.attn_q.weight";
    refused(s, "not a tensor of the base model");
    s = one_;
    s.tensors.push_back(random_pair(*base_file_, "token_embd.weight", 2, 9));
    refused(s, "token embedding");
    s = one_;
    s.tensors = {};
    refused(s, "no LoRA tensors");

    // Ranks that differ, and a missing half, written by hand.
    gguf::Writer w;
    w.add_metadata("general.architecture", gguf::Value::string("llama"));
    w.add_metadata("general.type", gguf::Value::string("adapter"));
    w.add_metadata("adapter.type", gguf::Value::string("lora"));
    const AdapterTensor& t = one_.tensors[0];
    const uint64_t a_shape[2] = {static_cast<uint64_t>(t.n_in), 4};
    const uint64_t b_shape[2] = {2, static_cast<uint64_t>(t.n_out)};
    const std::vector<float> b2(static_cast<size_t>(2 * t.n_out), 0.5f);
    w.add_tensor(t.base + ".lora_a", ElementType::F32, a_shape, [&t] { return bytes_of(t.a); });
    w.add_tensor(t.base + ".lora_b", ElementType::F32, b_shape, [&b2] { return bytes_of(b2); });
    w.add_tensor("blk.1.attn_k.weight.lora_a", ElementType::F32, a_shape, [&t] { return bytes_of(t.a); });
    w.write(path("bad-hand.gguf"));
    try {
        model::LoraAdapter::load(path("bad-hand.gguf"), *base);
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_TRUE(what.find("missing its lora_b") != std::string::npos || what.find("ranks") != std::string::npos)
            << what;
    }
    EXPECT_THROW(model::LoraAdapter::load(base_path_, *base), Error);  // a model, not an adapter
}

}  // namespace
}  // namespace cria::runtime
