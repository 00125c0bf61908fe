// Rows under different LoRA sets in one batch (Context::set_sequence_lora,
// model::LoraRows): a batch mixing a sequence under no adapter, one under
// adapter "one" at scale 1 and one under "one" at 0.5 plus adapter "two"
// gives, row by row, the logits of each sequence run alone under its set
// (a prefill with rows interleaved, then one-token steps); an entry of two
// sequences under different sets is refused; a saved state names its
// sequence's set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/lora_files.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

using test::AdapterSpec;
using test::random_pair;
using test::write_adapter;

constexpr int kSeqs = 3;
constexpr int kPrompt = 7, kSteps = 3;

// The tokens of sequence k (the tiny vocabulary has 320): prompts differ.
TokenId token(int k, int i) { return static_cast<TokenId>((37 * i + 101 * k + 5) % 320); }

ContextParams params(uint32_t n_seq) {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    return cp;
}

double max_abs_diff(std::span<const float> x, std::span<const float> y) {
    EXPECT_EQ(x.size(), y.size());
    double m = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
    return m;
}

// Run with F32 weights (kept as they are) and with Q8_0 weights, which are
// repacked and joined at load ([q; k; v], [gate; up]): a joined product must
// still apply each row's adapters of its parts.
class LoraRowsTest : public ::testing::TestWithParam<ElementType> {
protected:
    void SetUp() override {
        dir_ = test::temp_dir() / "lora-rows";
        std::filesystem::create_directories(dir_);
        const std::string base_path = (dir_ / "base.gguf").string();
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("llama");
        spec.weight_type = GetParam();
        model::write_synthetic_model(spec, base_path);
        const auto base_file = gguf::File::open(base_path);
        AdapterSpec one, two;
        one.alpha = 8.0f;
        one.tensors = {random_pair(*base_file, "blk.0.attn_q.weight", 4, 1),
                       random_pair(*base_file, "blk.0.attn_v.weight", 4, 2),
                       random_pair(*base_file, "blk.1.ffn_gate.weight", 4, 3),
                       random_pair(*base_file, "blk.1.ffn_down.weight", 4, 4),
                       random_pair(*base_file, "blk.1.attn_output.weight", 4, 5)};
        two.tensors = {random_pair(*base_file, "blk.0.attn_q.weight", 2, 6),
                       random_pair(*base_file, "blk.1.ffn_up.weight", 3, 7),
                       random_pair(*base_file, "blk.0.attn_k.weight", 2, 8)};
        write_adapter(one, (dir_ / "one.gguf").string());
        write_adapter(two, (dir_ / "two.gguf").string());
        base_ = model::Model::load(base_path);
        one_ = model::LoraAdapter::load((dir_ / "one.gguf").string(), *base_);
        two_ = model::LoraAdapter::load((dir_ / "two.gguf").string(), *base_);
        sets_[0].add(*one_, 0.0f);  // scale {0}: the base model
        sets_[1].add(*one_, 1.0f);
        sets_[2].add(*one_, 0.5f);
        sets_[2].add(*two_, -0.7f);
    }

    // Logits of sequence k's rows run alone under its set: the prompt's
    // rows, then each one-token step's row.
    std::vector<std::vector<float>> alone(int k) {
        Context ctx(*base_, params(1));
        ctx.set_lora(sets_[k]);
        Batch b;
        for (int i = 0; i < kPrompt; ++i) b.add(token(k, i), i, {0}, true);
        EXPECT_EQ(ctx.decode(b), 0);
        std::vector<std::vector<float>> rows;
        for (int i = 0; i < kPrompt; ++i) rows.emplace_back(ctx.logits(i).begin(), ctx.logits(i).end());
        for (int step = 0; step < kSteps; ++step) {
            Batch one;
            one.add(token(k, kPrompt + step), kPrompt + step, {0}, true);
            EXPECT_EQ(ctx.decode(one), 0);
            rows.emplace_back(ctx.logits(0).begin(), ctx.logits(0).end());
        }
        return rows;
    }

    std::filesystem::path dir_;
    std::unique_ptr<model::Model> base_;
    std::unique_ptr<model::LoraAdapter> one_, two_;
    model::LoraSet sets_[kSeqs];
};

TEST_P(LoraRowsTest, MixedBatchGivesEachRowItsOwnSetsLogits) {
    Context mixed(*base_, params(kSeqs));
    for (int k = 0; k < kSeqs; ++k) mixed.set_sequence_lora(k, sets_[k]);
    // The prompts interleaved: neighbouring rows are under different sets.
    std::vector<std::vector<std::vector<float>>> got(kSeqs);
    Batch b;
    for (int i = 0; i < kPrompt; ++i)
        for (int k = 0; k < kSeqs; ++k) b.add(token(k, i), i, {k}, true);
    ASSERT_EQ(mixed.decode(b), 0);
    for (int i = 0; i < kPrompt; ++i)
        for (int k = 0; k < kSeqs; ++k) {
            const auto row = mixed.logits(i * kSeqs + k);
            got[k].emplace_back(row.begin(), row.end());
        }
    for (int step = 0; step < kSteps; ++step) {
        Batch next;  // one token of each sequence: three rows, three sets
        for (int k = 0; k < kSeqs; ++k) next.add(token(k, kPrompt + step), kPrompt + step, {k}, true);
        ASSERT_EQ(mixed.decode(next), 0);
        for (int k = 0; k < kSeqs; ++k) got[k].emplace_back(mixed.logits(k).begin(), mixed.logits(k).end());
    }
    for (int k = 0; k < kSeqs; ++k) {
        SCOPED_TRACE("sequence " + std::to_string(k));
        const std::vector<std::vector<float>> expected = alone(k);
        ASSERT_EQ(got[k].size(), expected.size());
        double worst = 0, effect = 0;
        for (size_t r = 0; r < expected.size(); ++r) worst = std::max(worst, max_abs_diff(got[k][r], expected[r]));
        // The adapters change the output visibly (sequence 1 and 2 vs. the base on their own tokens).
        if (k > 0) {
            Context plain(*base_, params(1));
            Batch p;
            for (int i = 0; i < kPrompt; ++i) p.add(token(k, i), i, {0}, i + 1 == kPrompt);
            ASSERT_EQ(plain.decode(p), 0);
            effect = max_abs_diff(plain.logits(kPrompt - 1), expected[kPrompt - 1]);
            EXPECT_GT(effect, 0.05);
        }
        std::printf("[ lora rows ] sequence %d: max |mixed - alone| = %.3g over %zu rows (adapter effect %.3g)\n", k,
                    worst, expected.size(), effect);
        // The products over fewer columns may round differently.
        EXPECT_LT(worst, 1e-5);
    }
}

TEST_P(LoraRowsTest, EntryOfSequencesUnderDifferentSetsIsRefused) {
    Context ctx(*base_, params(kSeqs));
    ctx.set_sequence_lora(1, sets_[1]);
    ctx.set_sequence_lora(2, sets_[2]);
    Batch b;
    b.add(token(0, 0), 0, {1, 2}, true);
    EXPECT_THROW(ctx.decode(b), Error);
    // Under one set (the same scales) the entry is fine.
    ctx.set_sequence_lora(2, sets_[1]);
    EXPECT_EQ(ctx.decode(b), 0);
    EXPECT_THROW(ctx.set_sequence_lora(kSeqs, sets_[1]), Error);
}

TEST_P(LoraRowsTest, SavedStateNamesItsSequencesSet) {
    Context mixed(*base_, params(kSeqs));
    mixed.set_sequence_lora(1, sets_[1]);
    Batch b;
    for (int i = 0; i < kPrompt; ++i) b.add(token(1, i), i, {1}, i + 1 == kPrompt);
    ASSERT_EQ(mixed.decode(b), 0);
    std::vector<TokenId> saved;
    for (int i = 0; i < kPrompt; ++i) saved.push_back(token(1, i));
    const std::vector<uint8_t> state = mixed.sequence_state(1, saved);
    Context other(*base_, params(1));
    other.set_lora(sets_[2]);
    EXPECT_THROW(other.load_sequence_state(0, state), Error);
    Context same(*base_, params(1));
    same.set_lora(sets_[1]);
    EXPECT_EQ(same.load_sequence_state(0, state), saved);
    // Back to the context's set: the sequence's state no longer matches it.
    mixed.clear_sequence_lora(1);
    EXPECT_THROW(mixed.load_sequence_state(1, state), Error);
}

}  // namespace
INSTANTIATE_TEST_SUITE_P(WeightTypes, LoraRowsTest, ::testing::Values(ElementType::F32, ElementType::Q8_0),
                         [](const ::testing::TestParamInfo<ElementType>& info) {
                             return std::string(element_type_info(info.param)->name);
                         });

}  // namespace cria::runtime
