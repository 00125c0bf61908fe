// Speculative rollback of a recurrent state equals recomputation: on
// llama.cpp's mamba, mamba2, jamba, granitehybrid, lfm2, nemotron_h, nemotron_h_moe, falcon-h1 (a KV
// cache and a Mamba-2 state in every layer), minimax-01 (lightning attention), kimi-linear,
// bailingmoe3 and kimi-k3 fixtures (the hybrids roll back their KV cache and their recurrent state
// together; the last three their KDA convolution and delta-rule states), a verify batch of n tokens decoded
// inside a checkpoint and committed at k < n leaves the state a plain decode
// of the first k tokens leaves (the next token's logits agree), for every k.
// Also: a saved and restored sequence continues as it would have (the
// recurrent states are saved with the KV cache); two sequences decoded in one interleaved batch get the logits each
// gets alone (the state is per sequence), and a recurrent state refuses to
// forget part of its history.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

std::string fixture(const std::string& name) {
    const auto dir = test::arch_fixtures_dir();
    return dir.empty() ? "" : (dir / (name + ".gguf")).string();
}

ContextParams params() {
    ContextParams cp;
    cp.n_ctx = 128;
    cp.n_threads = 2;
    cp.n_seq_max = 2;
    cp.n_ubatch = 64;
    return cp;
}

std::vector<TokenId> tokens(size_t n) {
    std::vector<TokenId> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<TokenId>((i * 37 + 11) % 128);
    return t;
}

// Decodes tokens[first, last) of sequence `seq` in one batch; logits of every entry.
std::vector<std::vector<float>> decode(Context& ctx, const std::vector<TokenId>& t, size_t first, size_t last,
                                       SeqId seq = 0) {
    Batch b;
    for (size_t i = first; i < last; ++i) b.add(t[i], static_cast<int32_t>(i), {seq}, true);
    EXPECT_EQ(ctx.decode(b), 0);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < last - first; ++i) {
        const auto l = ctx.logits(static_cast<int32_t>(i));
        out.emplace_back(l.begin(), l.end());
    }
    return out;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double{a[i]} - b[i]));
    return d;
}

class RecurrentRollback : public ::testing::TestWithParam<std::string> {};

TEST_P(RecurrentRollback, CommittingKOfNEqualsDecodingK) {
    const std::string path = fixture(GetParam());
    if (path.empty()) GTEST_SKIP() << "llama.cpp's architecture fixtures are not here";
    const auto model = model::Model::load(path);
    const std::vector<TokenId> t = tokens(20);
    const size_t prefix = 9, n = 5;
    for (size_t k = 0; k <= n; ++k) {
        SCOPED_TRACE("accepted " + std::to_string(k) + " of " + std::to_string(n));
        Context spec(*model, params());
        decode(spec, t, 0, prefix);
        ASSERT_TRUE(spec.memory().checkpoint_begin(0, static_cast<int32_t>(n)));
        const auto verify = decode(spec, t, prefix, prefix + n);
        ASSERT_TRUE(spec.memory().checkpoint_commit(0, static_cast<int32_t>(k)));
        EXPECT_EQ(spec.memory_seq_pos_max(0), static_cast<int32_t>(prefix + k) - 1);
        const auto next = decode(spec, t, prefix + k, prefix + k + 1);

        Context plain(*model, params());
        const auto all = decode(plain, t, 0, prefix + k + 1);
        for (size_t i = 0; i < n; ++i)  // the verify batch saw what a plain decode sees
            if (i < k + 1 && prefix + i < all.size()) EXPECT_LT(max_diff(verify[i], all[prefix + i]), 1e-4) << i;
        EXPECT_LT(max_diff(next[0], all.back()), 1e-4);
    }
}

TEST_P(RecurrentRollback, InterleavedSequencesKeepTheirOwnState) {
    const std::string path = fixture(GetParam());
    if (path.empty()) GTEST_SKIP() << "llama.cpp's architecture fixtures are not here";
    const auto model = model::Model::load(path);
    const std::vector<TokenId> a = tokens(12);
    std::vector<TokenId> b = tokens(12);
    std::reverse(b.begin(), b.end());

    Context both(*model, params());
    Batch batch;
    for (size_t i = 0; i < 12; ++i) {
        batch.add(a[i], static_cast<int32_t>(i), {0}, true);
        batch.add(b[i], static_cast<int32_t>(i), {1}, true);
    }
    ASSERT_EQ(both.decode(batch), 0);
    Context alone_a(*model, params()), alone_b(*model, params());
    const auto la = decode(alone_a, a, 0, 12), lb = decode(alone_b, b, 0, 12);
    for (size_t i = 0; i < 12; ++i) {
        const auto ga = both.logits(static_cast<int32_t>(2 * i)), gb = both.logits(static_cast<int32_t>(2 * i + 1));
        EXPECT_LT(max_diff({ga.begin(), ga.end()}, la[i]), 1e-4) << i;
        EXPECT_LT(max_diff({gb.begin(), gb.end()}, lb[i]), 1e-4) << i;
    }
    // A recurrent state cannot forget part of its history, only all of it.
    EXPECT_FALSE(both.memory_seq_rm(0, 5, -1));
    EXPECT_EQ(both.memory_seq_pos_max(0), 11);
    EXPECT_TRUE(both.memory_seq_rm(0, -1, -1));
    EXPECT_EQ(both.memory_seq_pos_max(0), -1);
}

TEST_P(RecurrentRollback, ASavedSequenceCarriesItsStates) {
    // falcon-h1's layers each save a KV-cache section and a state section.
    const std::string path = fixture(GetParam());
    if (path.empty()) GTEST_SKIP() << "llama.cpp's architecture fixtures are not here";
    const auto model = model::Model::load(path);
    const std::vector<TokenId> t = tokens(16);
    Context first(*model, params());
    decode(first, t, 0, 11);
    const auto file = test::temp_dir() / ("recurrent-saved-" + GetParam() + ".bin");
    const std::vector<TokenId> cached(t.begin(), t.begin() + 11);
    ASSERT_EQ(first.save_sequence(0, cached, file.string()), cached.size());
    const auto expected = decode(first, t, 11, 16);

    Context second(*model, params());
    EXPECT_EQ(second.restore_sequence(1, file.string()), cached);
    const auto got = decode(second, t, 11, 16, 1);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(max_diff(got[i], expected[i]), 1e-4) << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RecurrentRollback,
                         ::testing::Values("mamba-dense", "mamba2-dense", "jamba-dense", "granitehybrid-dense", "lfm2-dense",
                                           "nemotron_h-dense", "nemotron_h_moe-moe", "falcon-h1-dense",
                                           "minimax-01-moe", "kimi-linear-moe", "bailingmoe3-moe", "kimi-k3-moe"),
                         [](const auto& info) {
                             // The architecture: the name before its last '-', '-' made '_'.
                             std::string name = info.param.substr(0, info.param.rfind('-'));
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

}  // namespace
}  // namespace cria::runtime
