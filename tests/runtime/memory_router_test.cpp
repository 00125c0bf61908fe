// Context's memory is a memory::HybridMemory router: one KV cache for llama,
// a full and a sliding-window cache for gemma2 (window 8 in the synthetic
// fixtures). Checkpoint/commit through ctx.memory() equals decoding only the
// accepted tokens, a sequence saved as sections (one per cache) continues
// as before once restored, and micro-batches regrouped per sequence (as a
// recurrent memory asks) give the same outputs as in-order slices.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

const model::Model& synthetic(const std::string& arch) {
    static std::map<std::string, std::pair<std::shared_ptr<const gguf::File>, std::unique_ptr<model::Model>>> cache;
    auto it = cache.find(arch);
    if (it != cache.end()) return *it->second.second;
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
    spec.stddev = 0.08f;
    spec.seed = 11;
    const auto path = (test::temp_dir() / ("memory-router-" + arch + ".gguf")).string();
    model::write_synthetic_model(spec, path);
    auto file = std::shared_ptr<const gguf::File>(gguf::File::open(path));
    auto model = model::Model::from_file(file);
    return *cache.emplace(arch, std::make_pair(file, std::move(model))).first->second.second;
}

ContextParams params() {
    ContextParams cp;
    cp.n_ctx = 128;
    cp.n_threads = 2;
    cp.n_seq_max = 2;
    cp.type_k = cp.type_v = ElementType::F32;
    return cp;
}

std::vector<TokenId> tokens(uint32_t n_vocab, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<TokenId> t(n);
    for (auto& x : t) x = static_cast<TokenId>(rng() % n_vocab);
    return t;
}

std::vector<float> last_logits(Context& ctx) {
    auto l = ctx.logits(-1);
    return {l.begin(), l.end()};
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
    return d;
}

class MemoryRouter : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryRouter, LayersLiveInTheirCache) {
    const model::Model& m = synthetic(GetParam());
    Context ctx(m, params());
    const model::HParams& hp = m.hparams();
    const bool has_window = std::any_of(hp.swa_layers.begin(), hp.swa_layers.end(), [](bool b) { return b; });
    ASSERT_EQ(ctx.memory().n_children(), has_window ? 2u : 1u);
    ASSERT_EQ(ctx.memory().n_layer(), hp.n_layer);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const auto* kv = ctx.memory().layer(l).kv;
        ASSERT_NE(kv, nullptr);
        EXPECT_EQ(kv->params().n_swa > 0, hp.is_swa(l)) << l;
    }
    EXPECT_EQ(ctx.memory_bytes(), ctx.memory().memory_bytes());
}

TEST_P(MemoryRouter, CheckpointCommitEqualsDecodingTheAcceptedTokens) {
    const model::Model& m = synthetic(GetParam());
    const uint32_t n_vocab = m.hparams().n_vocab;
    const auto prompt = tokens(n_vocab, 12, 5), draft = tokens(n_vocab, 5, 6);
    const auto n = static_cast<int32_t>(prompt.size());

    Context ctx(m, params());
    ASSERT_EQ(ctx.decode(Batch::from_tokens(prompt, 0)), 0);
    ASSERT_TRUE(ctx.memory().checkpoint_begin(0, 5));
    ASSERT_EQ(ctx.decode(Batch::from_tokens(draft, n, 0, true)), 0);
    ASSERT_TRUE(ctx.memory().checkpoint_commit(0, 3));
    EXPECT_EQ(ctx.memory_seq_pos_max(0), n + 2);
    Batch next;
    next.add(9, n + 3, {0}, true);
    ASSERT_EQ(ctx.decode(next), 0);

    auto accepted = prompt;
    accepted.insert(accepted.end(), draft.begin(), draft.begin() + 3);
    accepted.push_back(9);
    Context fresh(m, params());
    ASSERT_EQ(fresh.decode(Batch::from_tokens(accepted, 0)), 0);
    EXPECT_LT(max_diff(last_logits(ctx), last_logits(fresh)), 1e-4f);
}

TEST_P(MemoryRouter, SavedSectionsRestoreAndContinue) {
    const model::Model& m = synthetic(GetParam());
    const uint32_t n_vocab = m.hparams().n_vocab;
    const auto prompt = tokens(n_vocab, 20, 7);  // longer than the window of 8
    const auto n = static_cast<int32_t>(prompt.size());
    Context a(m, params());
    ASSERT_EQ(a.decode(Batch::from_tokens(prompt, 0)), 0);
    const auto file = test::temp_dir() / ("memory-router-" + GetParam() + ".seq");
    EXPECT_EQ(a.save_sequence(0, prompt, file.string()), prompt.size());

    Context b(m, params());
    ASSERT_EQ(b.decode(Batch::from_tokens(tokens(n_vocab, 4, 8), 0, 1)), 0);  // something else first
    EXPECT_EQ(b.restore_sequence(1, file.string()), prompt);
    EXPECT_EQ(b.memory_seq_pos_max(1), n - 1);
    EXPECT_EQ(b.memory_seq_pos_min(1), 0);
    Batch next_a, next_b;
    next_a.add(4, n, {0}, true);
    next_b.add(4, n, {1}, true);
    ASSERT_EQ(a.decode(next_a), 0);
    ASSERT_EQ(b.decode(next_b), 0);
    EXPECT_EQ(last_logits(a), last_logits(b));
}

INSTANTIATE_TEST_SUITE_P(FullAndWindow, MemoryRouter, ::testing::Values("llama", "gemma2"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace cria::runtime

namespace cria::runtime {
namespace {

// A router with an extra recurrent memory (no layer in it) makes the memory
// regroup batches per sequence: the runtime gathers each micro-batch and puts
// the outputs back in batch order. Same logits as the plain in-order path.
TEST(MemoryRouterSplit, RegroupedMicroBatchesGiveTheSameOutputs) {
    const model::Model& m = synthetic("llama");
    const model::HParams& hp = m.hparams();
    ContextParams cp = params();
    cp.n_ubatch = 3;
    memory::KvCacheParams kp;
    kp.n_cells = cp.n_ctx;
    kp.n_layer = hp.n_layer;
    kp.n_head_kv = hp.n_head_kv;
    kp.head_dim = hp.head_dim;
    kp.head_dim_v = hp.head_dim_v;
    kp.type_k = cp.type_k;
    kp.type_v = cp.type_v;
    memory::RecurrentParams rp;
    rp.n_layer = 1;
    rp.r_size = rp.s_size = 2;
    rp.n_seq_max = cp.n_seq_max;
    std::vector<std::unique_ptr<memory::Memory>> children;
    children.push_back(std::make_unique<memory::KvCache>(kp));
    children.push_back(std::make_unique<memory::RecurrentMemory>(rp));
    std::vector<memory::HybridMemory::LayerPlacement> layers;
    for (uint32_t l = 0; l < hp.n_layer; ++l) layers.push_back({0, l});
    Context regrouped(m, cp, std::make_unique<memory::HybridMemory>(std::move(children), layers));
    Context plain(m, cp);

    // Two sequences interleaved, every other entry with logits.
    const auto a = tokens(hp.n_vocab, 7, 21), b = tokens(hp.n_vocab, 7, 22);
    Batch batch;
    for (int32_t i = 0; i < 7; ++i) {
        batch.add(a[i], i, {0}, i % 2 == 0);
        batch.add(b[i], i, {1}, true);
    }
    const memory::Split split = regrouped.memory().split(
        {batch.size(), batch.positions().data(), batch.seq_masks().data()}, cp.n_ubatch);
    ASSERT_FALSE(split.in_order);
    ASSERT_EQ(regrouped.decode(batch), 0);
    ASSERT_EQ(plain.decode(batch), 0);
    for (int32_t i = 0; i < batch.size(); ++i) {
        if (!batch.outputs()[i]) continue;
        auto x = regrouped.logits(i), y = plain.logits(i);
        EXPECT_LT(max_diff({x.begin(), x.end()}, {y.begin(), y.end()}), 1e-4f) << "entry " << i;
    }
    EXPECT_EQ(regrouped.memory_seq_pos_max(1), 6);
    EXPECT_EQ(regrouped.memory().child(1).seq_pos_max(0), 6);  // the recurrent memory followed along

    std::vector<std::unique_ptr<memory::Memory>> one;
    one.push_back(std::make_unique<memory::KvCache>(kp));
    EXPECT_THROW(Context(m, cp, std::make_unique<memory::HybridMemory>(
                                    std::move(one), std::vector<memory::HybridMemory::LayerPlacement>{{0, 0}})),
                 Error);
}

}  // namespace
}  // namespace cria::runtime
