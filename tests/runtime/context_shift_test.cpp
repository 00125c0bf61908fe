// Context shift (runtime/context_shift.h): a shifted KV cache against a
// computation without the shift, the llama.cpp rules for n_keep and
// n_discard, generation past a full context, and the memories that refuse.
//
// What a shift must equal. The moved tokens keep what their deeper layers
// computed with the dropped tokens in context (llama.cpp's shift does not
// recompute them), so two exact references exist:
// - a one-layer model: its cached keys and values depend only on each
//   token and its position, so the shifted cache equals a fresh prefill of
//   the kept + moved tokens at their new positions;
// - any depth with nothing kept before the dropped range: every distance
//   between cached tokens is unchanged, and RoPE scores depend only on
//   distances, so the shifted cache's next token equals the same token after
//   only removing the range (no shift) at its old position.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/context_shift.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/params.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

// window: the sliding window of the architectures that have one (0: tiny()'s).
std::unique_ptr<model::Model> synthetic(const std::string& arch, uint32_t n_layer, uint32_t head_dim = 16,
                                        uint32_t window = 0) {
    static std::map<std::string, std::string> written;
    const std::string key = arch + "-" + std::to_string(n_layer) + "-" + std::to_string(head_dim) + "-" + std::to_string(window);
    auto it = written.find(key);
    if (it == written.end()) {
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
        spec.n_layer = n_layer;
        spec.head_dim = head_dim;
        if (window > 0 && spec.sliding_window > 0) spec.sliding_window = window;
        spec.stddev = 0.08f;  // logits spread, so a wrong rotation shows
        spec.seed = 11;
        const auto path = (test::temp_dir() / ("shift-" + key + ".gguf")).string();
        model::write_synthetic_model(spec, path);
        it = written.emplace(key, path).first;
    }
    return model::Model::load(it->second);
}

std::vector<int32_t> random_tokens(uint32_t n_vocab, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % n_vocab);
    return t;
}

ContextParams params(uint32_t n_ctx, ElementType kv = ElementType::F32) {
    ContextParams cp;
    cp.n_ctx = n_ctx;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = kv;
    return cp;
}

std::vector<float> last_logits(Context& ctx) {
    auto l = ctx.logits(-1);
    return {l.begin(), l.end()};
}

// Normalised mean squared error of `got` against `want`.
double nmse(const std::vector<float>& want, const std::vector<float>& got) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
        den += double{want[i]} * want[i];
    }
    return num / den;
}

// The next token's logits after decoding `tokens`, then (llama.cpp's order)
// dropping [n_keep, n_keep + n_discard) and moving the rest back.
std::vector<float> shifted_next(const model::Model& m, const std::vector<int32_t>& tokens, int32_t n_keep,
                                int32_t n_discard, int32_t next, ElementType kv = ElementType::F32) {
    Context ctx(m, params(64, kv));
    EXPECT_EQ(ctx.decode(Batch::from_tokens(tokens, 0)), 0);
    const int32_t n_past = shift_context(ctx, 0, static_cast<int32_t>(tokens.size()), n_keep, n_discard);
    EXPECT_EQ(n_past, static_cast<int32_t>(tokens.size()) - n_discard);
    EXPECT_EQ(ctx.memory_seq_pos_max(0), n_past - 1);
    Batch b;
    b.add(next, n_past, {0}, true);
    EXPECT_EQ(ctx.decode(b), 0);
    return last_logits(ctx);
}

std::vector<float> fresh_next(const model::Model& m, const std::vector<int32_t>& tokens, int32_t next,
                              ElementType kv = ElementType::F32) {
    Context ctx(m, params(64, kv));
    std::vector<int32_t> all = tokens;
    all.push_back(next);
    EXPECT_EQ(ctx.decode(Batch::from_tokens(all, 0)), 0);
    return last_logits(ctx);
}

// The kept tokens followed by the moved ones (the dropped range cut out).
std::vector<int32_t> kept_and_moved(const std::vector<int32_t>& t, int32_t n_keep, int32_t n_discard) {
    std::vector<int32_t> out(t.begin(), t.begin() + n_keep);
    out.insert(out.end(), t.begin() + n_keep + n_discard, t.end());
    return out;
}

TEST(ContextShift, OneLayerShiftedCacheEqualsFreshPrefillOfKeptAndMovedTokens) {
    auto m = synthetic("llama", 1);
    const auto tokens = random_tokens(m->hparams().n_vocab, 29, 5);
    const int32_t n_keep = 5, n_discard = 12, next = 7;
    const auto got = shifted_next(*m, tokens, n_keep, n_discard, next);
    const auto want = fresh_next(*m, kept_and_moved(tokens, n_keep, n_discard), next);
    const double e = nmse(want, got);
    std::printf("one-layer llama, F32 cache: NMSE %.3g\n", e);
    EXPECT_LT(e, 1e-10);
    // Without re-rotating the moved keys the result is far off: the test can fail.
    Context unrotated(*m, params(64));
    ASSERT_EQ(unrotated.decode(Batch::from_tokens(tokens, 0)), 0);
    unrotated.memory_seq_rm(0, n_keep, n_keep + n_discard);
    Batch b;
    b.add(next, static_cast<int32_t>(tokens.size()), {0}, true);
    ASSERT_EQ(unrotated.decode(b), 0);
    EXPECT_GT(nmse(want, last_logits(unrotated)), 1e-4);
}

// F16 and Q8_0 caches re-rotate through F32 and round again (as llama.cpp's
// K-shift casts back to the cache type): close, not bit-equal.
TEST(ContextShift, QuantizedCachesShiftWithinRoundingError) {
    auto m = synthetic("llama", 1, 32);  // Q8_0 blocks of 32 values
    const auto tokens = random_tokens(m->hparams().n_vocab, 29, 6);
    const int32_t n_keep = 3, n_discard = 13, next = 9;
    for (auto [kv, bound] : {std::pair{ElementType::F16, 1e-5}, std::pair{ElementType::Q8_0, 1e-3}}) {
        const auto got = shifted_next(*m, tokens, n_keep, n_discard, next, kv);
        const auto want = fresh_next(*m, kept_and_moved(tokens, n_keep, n_discard), next, kv);
        const double e = nmse(want, got);
        std::printf("one-layer llama, %s cache: NMSE %.3g\n", element_type_name(kv).data(), e);
        EXPECT_LT(e, bound) << element_type_name(kv);
    }
}

// Deeper models, nothing kept: the shift equals removal alone.
void expect_shift_equals_removal(const model::Model& m, const std::string& what, double bound) {
    const auto tokens = random_tokens(m.hparams().n_vocab, 31, 8);
    const int32_t n_discard = 14, next = 4;
    const auto got = shifted_next(m, tokens, 0, n_discard, next);
    Context removed(m, params(64));
    ASSERT_EQ(removed.decode(Batch::from_tokens(tokens, 0)), 0);
    removed.memory_seq_rm(0, 0, n_discard);
    Batch b;
    b.add(next, static_cast<int32_t>(tokens.size()), {0}, true);
    ASSERT_EQ(removed.decode(b), 0);
    const double e = nmse(last_logits(removed), got);
    std::printf("%s, keep 0: NMSE %.3g\n", what.c_str(), e);
    EXPECT_LT(e, bound) << what;
}

TEST(ContextShift, DeepModelsShiftedCacheEqualsRemovalWhenNothingIsKept) {
    // llama; qwen3 (NeoX, Q/K norms); smollm3 (layers without rope);
    // deepseek2 (only MLA's roped tail turns); gpt-oss (YaRN) and gemma2
    // (their own rope base on window layers) with a window as long as the
    // context, which frees nothing.
    for (const std::string arch : {"llama", "qwen3", "smollm3", "deepseek2", "gpt-oss", "gemma2"}) {
        auto m = synthetic(arch, 3, 16, 64);
        if (!context_shift_refusal(Context(*m, params(64))).empty()) {
            ADD_FAILURE() << arch << " refuses: " << context_shift_refusal(Context(*m, params(64)));
            continue;
        }
        expect_shift_equals_removal(*m, arch, 1e-9);
    }
}

TEST(ContextShift, Austen7mShiftedCacheEqualsRemovalWhenNothingIsKept) {
    const auto path = test::model_path("austen-7m/austen-7m-f32.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path << " (the austen models are not here)";
    auto m = model::Model::load(path.string());
    expect_shift_equals_removal(*m, "austen-7m", 1e-9);
}

TEST(ContextShift, LlamaCppRulesForKeepAndDiscard) {
    // llama-completion: -1 or more than the prompt keeps it all; else the BOS too.
    EXPECT_EQ(completion_n_keep(-1, 10, true), 10);
    EXPECT_EQ(completion_n_keep(11, 10, true), 10);
    EXPECT_EQ(completion_n_keep(0, 10, true), 1);
    EXPECT_EQ(completion_n_keep(4, 10, false), 4);
    // llama-server: the BOS on top of the request's n_keep, at most n_ctx - 4.
    EXPECT_EQ(server_n_keep(-1, 10, true, 64), 11);
    EXPECT_EQ(server_n_keep(0, 10, false, 64), 0);
    EXPECT_EQ(server_n_keep(100, 10, true, 64), 60);
    // Half of what follows the kept ones, an explicit count clamped to leave one.
    EXPECT_EQ(discard_count(63, 1, 0), 31);
    EXPECT_EQ(discard_count(63, 0, 0), 31);
    EXPECT_EQ(discard_count(63, 1, 10), 10);
    EXPECT_EQ(discard_count(63, 1, 100), 61);
    EXPECT_EQ(discard_count(5, 5, 0), 0);
    EXPECT_EQ(discard_count(5, 7, 0), 0);
}

TEST(ContextShift, BadRangesThrow) {
    auto m = synthetic("llama", 1);
    Context ctx(*m, params(64));
    ASSERT_EQ(ctx.decode(Batch::from_tokens(random_tokens(m->hparams().n_vocab, 10, 1), 0)), 0);
    EXPECT_THROW(shift_context(ctx, 0, 10, 6, 5), Error);
    EXPECT_THROW(shift_context(ctx, 0, 10, -1, 2), Error);
    EXPECT_EQ(shift_context(ctx, 0, 10, 4, 0), 10);  // nothing to drop: unchanged
    EXPECT_EQ(ctx.memory_seq_pos_max(0), 9);
}

// A prompt shared by two sequences (n > 1 choices): moving its cells for one
// would move them for the other, so the shift is refused, changing nothing;
// once the other lets go of them it goes through.
TEST(ContextShift, CellsSharedWithAnotherSequenceAreNotMoved) {
    auto m = synthetic("llama", 1);
    ContextParams cp = params(64);
    cp.n_seq_max = 2;
    Context ctx(*m, cp);
    ASSERT_EQ(ctx.decode(Batch::from_tokens(random_tokens(m->hparams().n_vocab, 20, 4), 0)), 0);
    ASSERT_TRUE(ctx.memory_seq_cp(0, 1, 0, 12));
    EXPECT_EQ(sequences_sharing(ctx, 0, 0, 20), uint64_t{2});
    EXPECT_EQ(sequences_sharing(ctx, 0, 12, 20), uint64_t{0});
    try {
        shift_context(ctx, 0, 20, 2, 6);  // would move 8..19, of which 8..11 are shared
        ADD_FAILURE() << "the shift of shared cells was not refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("shares the cells it would move with sequence 1"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(ctx.memory_seq_pos_max(0), 19);
    EXPECT_EQ(ctx.memory_seq_pos_max(1), 11);
    EXPECT_EQ(shift_context(ctx, 0, 20, 2, 10), 10);  // moves 12..19 only: not shared
    EXPECT_EQ(ctx.memory_seq_pos_max(1), 11);         // the other sequence is untouched
    EXPECT_EQ(ctx.memory_seq_pos_max(0), 9);
}

// Greedy sampling, so that two runs agree token for token.
sampling::Chain greedy_chain(const vocab::Vocab& vocab) {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    return sampling::build_chain(sp, cc);
}

TEST(ContextShift, GenerationGoesPastAFullContextOnlyWithTheShift) {
    auto m = synthetic("llama", 2);
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(m->file());
    const auto prompt = random_tokens(m->hparams().n_vocab, 6, 2);
    const uint32_t n_ctx = 16;
    {
        // Off: stops at the full context, as before.
        Context ctx(*m, params(n_ctx));
        auto chain = greedy_chain(vocab);
        const auto r = generate(ctx, vocab, chain, prompt, 100);
        EXPECT_EQ(r.stop, StopReason::ContextFull);
        EXPECT_LE(prompt.size() + r.tokens.size(), n_ctx + 1);
    }
    // On: 100 tokens in a context of 16; the cache never holds more.
    Context ctx(*m, params(n_ctx));
    auto chain = greedy_chain(vocab);
    int32_t highest = 0;
    const auto r = generate(ctx, vocab, chain, prompt, 100,
                            [&](TokenId) {
                                highest = std::max(highest, ctx.memory_seq_pos_max(0));
                                return true;
                            },
                            ContextShiftPolicy{true, 3});
    if (r.stop == StopReason::EndOfGeneration) GTEST_SKIP() << "the synthetic model sampled its end token";
    EXPECT_EQ(r.stop, StopReason::Length);
    EXPECT_EQ(r.tokens.size(), 100u);
    EXPECT_LT(highest, static_cast<int32_t>(n_ctx));
    // The kept prefix stays where it was: positions 0..2 are the prompt's first tokens.
    EXPECT_EQ(ctx.memory_seq_pos_min(0), 0);

    // The first shift happens when the next token would fill the context
    // (llama-completion's n_past + 1 >= n_ctx): the tokens before it equal a
    // run without the shift.
    Context plain(*m, params(n_ctx));
    auto chain2 = greedy_chain(vocab);
    const auto p = generate(plain, vocab, chain2, prompt, 100);
    const size_t before = n_ctx - 1 - prompt.size() + 1;  // tokens sampled before the first shift's decode
    ASSERT_GE(p.tokens.size(), before);
    EXPECT_EQ(std::vector<TokenId>(r.tokens.begin(), r.tokens.begin() + static_cast<std::ptrdiff_t>(before)),
              std::vector<TokenId>(p.tokens.begin(), p.tokens.begin() + static_cast<std::ptrdiff_t>(before)));
}

TEST(ContextShift, MemoriesThatCannotShiftAreRefused) {
    struct Case {
        std::string arch;
        std::string reason;
    };
    // gemma2: its window of 8 is smaller than the context; glm4moe: M-RoPE;
    // qwen35: gated delta nets keep recurrent states.
    for (const Case& c : {Case{"gemma2", "sliding window"}, Case{"glm4moe", "M-RoPE"}, Case{"qwen35", "recurrent"}}) {
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(c.arch);
        const auto path = (test::temp_dir() / ("shift-refuse-" + c.arch + ".gguf")).string();
        model::write_synthetic_model(spec, path);
        auto m = model::Model::load(path);
        Context ctx(*m, params(64));
        const std::string why = context_shift_refusal(ctx);
        EXPECT_NE(why.find(c.reason), std::string::npos) << c.arch << ": " << why;
        ASSERT_EQ(ctx.decode(Batch::from_tokens(random_tokens(m->hparams().n_vocab, 10, 3), 0)), 0);
        try {
            shift_context(ctx, 0, 10, 2, 4);
            ADD_FAILURE() << c.arch << ": the shift was not refused";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("cannot shift"), std::string::npos) << e.what();
        }
        EXPECT_EQ(ctx.memory_seq_pos_max(0), 9) << c.arch << ": a refused shift changed the cache";
        const vocab::Vocab vocab = vocab::Vocab::from_gguf(m->file());
        auto chain = greedy_chain(vocab);
        EXPECT_THROW(generate(ctx, vocab, chain, {1, 2, 3}, 5, {}, ContextShiftPolicy{true, 0}), Error) << c.arch;
    }
    // A window as large as the context frees nothing: gemma2 can shift then.
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("gemma2");
    const auto path = (test::temp_dir() / "shift-gemma2-window.gguf").string();
    model::write_synthetic_model(spec, path);
    auto m = model::Model::load(path);
    EXPECT_EQ(context_shift_refusal(Context(*m, params(8))), "");
}

}  // namespace
}  // namespace cria::runtime
