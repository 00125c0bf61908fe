// The gated delta-net families (qwen35, qwen35moe, qwen3next) on synthetic
// fixtures (delta-net layers 0 and 2, gated attention 1 and 3; 2 key heads
// and 4 value heads, so tiled and grouped head maps differ):
// - the fast path (a prompt, and one-token steps) agrees with
//   model::reference_forward (float64), with F32 weights (quantised ones are
//   the matmul module's business, tested there and in the fixture suites);
// - prefill in chunks of 1, 7 and 64 tokens (one-token steps, short runs
//   advanced token by token, a prompt through the chunked rule) equals one
//   call: the convolution and delta-rule states carry across calls;
// - rollback: a verify batch of n tokens inside a checkpoint, k < n of them
//   committed, then the next token, equals decoding the kept tokens afresh.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "cria/gguf/file.h"
#include "cria/memory/hybrid_memory.h"
#include "cria/model/model.h"
#include "cria/model/reference_forward.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

using Rows = std::vector<std::vector<float>>;

struct Fixture {
    std::shared_ptr<const gguf::File> file;
    std::unique_ptr<model::Model> model;
};

Fixture& fixture(const std::string& arch, ElementType type) {
    static std::map<std::string, Fixture> cache;
    const std::string key = arch + "-" + std::string(element_type_name(type));
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
    spec.stddev = 0.08f;
    spec.seed = 11;
    spec.weight_type = type;
    const auto path = (test::temp_dir() / ("delta-net-" + key + ".gguf")).string();
    model::write_synthetic_model(spec, path);
    Fixture f;
    f.file = std::shared_ptr<const gguf::File>(gguf::File::open(path));
    f.model = model::Model::from_file(f.file);
    return cache.emplace(key, std::move(f)).first->second;
}

std::vector<int32_t> random_tokens(uint32_t n_vocab, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % n_vocab);
    return t;
}

ContextParams params() {
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 2;
    return cp;
}

// Decodes tokens[first, first + n) of sequence 0 at their positions; the logits of all of them.
Rows decode(Context& ctx, const std::vector<int32_t>& tokens, size_t first, size_t n) {
    const std::vector<int32_t> part(tokens.begin() + static_cast<std::ptrdiff_t>(first),
                                    tokens.begin() + static_cast<std::ptrdiff_t>(first + n));
    EXPECT_EQ(ctx.decode(Batch::from_tokens(part, static_cast<int32_t>(first), 0, true)), 0);
    Rows out;
    for (size_t i = 0; i < n; ++i) {
        const auto l = ctx.logits(static_cast<int32_t>(i));
        out.emplace_back(l.begin(), l.end());
    }
    return out;
}

Rows decode_chunks(const model::Model& m, const std::vector<int32_t>& tokens, size_t chunk) {
    Context ctx(m, params());
    Rows out;
    for (size_t first = 0; first < tokens.size(); first += chunk) {
        Rows r = decode(ctx, tokens, first, std::min(chunk, tokens.size() - first));
        out.insert(out.end(), r.begin(), r.end());
    }
    return out;
}

double max_abs_diff(const Rows& a, const Rows& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < a[i].size(); ++j) d = std::max(d, std::fabs(double(a[i][j]) - b[i][j]));
    return d;
}

class DeltaNet : public ::testing::TestWithParam<std::string> {};

TEST_P(DeltaNet, FastPathMatchesReference) {
    Fixture& f = fixture(GetParam(), ElementType::F32);
    const auto tokens = random_tokens(f.model->hparams().n_vocab, 80, 3);
    // One prompt (the chunked rule), and one-token steps (the recurrent rule).
    const auto ref = model::reference_forward(*f.file, tokens);
    for (size_t chunk : {tokens.size(), size_t{1}}) {
        const Rows got = decode_chunks(*f.model, tokens, chunk);
        ASSERT_EQ(ref.size(), got.size());
        EXPECT_LT(max_abs_diff(ref, got), 5e-3) << chunk;  // float against double, logits of magnitude ~10
    }
}

TEST_P(DeltaNet, ChunksEqualOneCall) {
    Fixture& f = fixture(GetParam(), ElementType::F32);
    const auto tokens = random_tokens(f.model->hparams().n_vocab, 150, 5);
    const Rows whole = decode_chunks(*f.model, tokens, tokens.size());
    for (size_t chunk : {1, 7, 64}) EXPECT_LT(max_abs_diff(whole, decode_chunks(*f.model, tokens, chunk)), 5e-4) << chunk;
}

TEST_P(DeltaNet, RollbackEqualsRecomputation) {
    Fixture& f = fixture(GetParam(), ElementType::F32);
    const auto tokens = random_tokens(f.model->hparams().n_vocab, 40, 9);
    const size_t prefix = 30, verify = 6, next = 1;
    for (int32_t kept : {1, 3, 6}) {
        SCOPED_TRACE(kept);
        // Prefix, then a verify batch of 6 inside a checkpoint, `kept` of them accepted.
        Context ctx(*f.model, params());
        decode(ctx, tokens, 0, prefix);
        ASSERT_TRUE(ctx.memory().checkpoint_begin(0, static_cast<int32_t>(verify)));
        decode(ctx, tokens, prefix, verify);
        ASSERT_TRUE(ctx.memory().checkpoint_commit(0, kept));
        EXPECT_EQ(ctx.memory_seq_pos_max(0), static_cast<int32_t>(prefix) + kept - 1);
        // The token after the kept ones (whatever it is: the next of `tokens`).
        std::vector<int32_t> resumed(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(prefix + kept));
        resumed.push_back(tokens[prefix + verify + next]);
        const Rows after = decode(ctx, resumed, resumed.size() - 1, 1);

        Context fresh(*f.model, params());
        decode(fresh, resumed, 0, resumed.size() - 1);
        const Rows expected = decode(fresh, resumed, resumed.size() - 1, 1);
        EXPECT_LT(max_abs_diff(expected, after), 1e-4);
    }
}

INSTANTIATE_TEST_SUITE_P(All, DeltaNet, ::testing::Values("qwen35", "qwen35moe", "qwen3next"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cria::runtime
