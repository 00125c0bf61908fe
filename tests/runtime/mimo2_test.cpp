// mimo2 on the MTP fixture's target (../shared/testdata/drafter-fixtures/
// mimo2-austen-1m-mtp.gguf): its trunk is austen-1m's weights carried into
// mimo2's layout (fused QKV, rows not permuted for NeoX rope, a separate
// output copy of the tied embedding), so its logits must be those of
// austen-1m-f16 as llama (whose logits match llama.cpp's fixtures), with a
// prefill and with one-token steps; the float64 reference forward matches
// the fast path; and files mimo2 cannot run are refused clearly.

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/model.h"
#include "cria/model/reference_forward.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

std::filesystem::path mimo2_path() {
    const char* env = std::getenv("CRIA_DRAFTER_FIXTURES");
    const auto dir = env ? std::filesystem::path(env)
                         : test::source_dir().parent_path() / "shared" / "testdata" / "drafter-fixtures";
    const auto p = dir / "mimo2-austen-1m-mtp.gguf";
    return std::filesystem::exists(p) ? p : std::filesystem::path();
}

const std::vector<int32_t> kTokens = {45, 1022, 300, 17, 2999, 88, 640, 5, 4000, 123, 77, 3001,
                                      9, 250, 1800, 66, 412, 3, 2048, 700, 31, 95, 1500, 260};

// Logits of every position, decoding `chunk` tokens per call.
std::vector<std::vector<float>> logits(const model::Model& m, size_t chunk) {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    Context ctx(m, cp);
    std::vector<std::vector<float>> out;
    for (size_t first = 0; first < kTokens.size(); first += chunk) {
        const size_t n = std::min(chunk, kTokens.size() - first);
        const std::vector<int32_t> part(kTokens.begin() + first, kTokens.begin() + first + n);
        EXPECT_EQ(ctx.decode(Batch::from_tokens(part, static_cast<int32_t>(first), 0, true)), 0);
        for (size_t i = 0; i < n; ++i) {
            const auto l = ctx.logits(static_cast<int32_t>(i));
            out.emplace_back(l.begin(), l.end());
        }
    }
    return out;
}

double nmse(const std::vector<float>& ref, const std::vector<float>& got) {
    double num = 0, den = 0;
    for (size_t j = 0; j < ref.size(); ++j) {
        num += (double(got[j]) - ref[j]) * (double(got[j]) - ref[j]);
        den += double(ref[j]) * ref[j];
    }
    return num / den;
}

TEST(Mimo2, TrunkGivesAusten1mLogitsWithPrefillAndSteps) {
    if (mimo2_path().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const auto mimo = model::Model::load(mimo2_path().string());
    EXPECT_EQ(mimo->hparams().n_layer, 2u);
    EXPECT_EQ(mimo->hparams().n_layer_nextn, 1u);
    const auto llama = model::Model::load(test::model_path("austen-1m/austen-1m-f16.gguf").string());
    const auto want = logits(*llama, kTokens.size());
    for (size_t chunk : {kTokens.size(), size_t{1}}) {
        const auto got = logits(*mimo, chunk);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_LE(nmse(want[i], got[i]), 1e-8) << "chunk " << chunk << " position " << i;
    }
}

TEST(Mimo2, ReferenceForwardMatchesTheFastPath) {
    if (mimo2_path().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const auto file = gguf::File::open(mimo2_path().string());
    const auto ref = model::reference_forward(*file, kTokens);
    const auto mimo = model::Model::load(mimo2_path().string());
    const auto got = logits(*mimo, kTokens.size());
    ASSERT_EQ(ref.size(), got.size());
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, nmse(ref[i], got[i]));
    EXPECT_LE(worst, 1e-4);
    std::printf("[ nmse     ] mimo2 reference forward vs fast path: %.3g\n", worst);
}

// The fixture written again with one key replaced (or dropped: nullopt).
std::string with_key(const std::string& key, std::optional<gguf::Value> value, const std::string& name) {
    const auto src = gguf::File::open(mimo2_path().string());
    gguf::Writer w;
    for (const auto& [k, v] : src->metadata()) {
        if (k == "general.alignment") continue;
        if (k == key) {
            if (value) w.add_metadata(k, *value);
            continue;
        }
        w.add_metadata(k, v);
    }
    if (!src->find(key) && value) w.add_metadata(key, *value);
    for (const auto& t : src->tensors()) {
        const std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        const auto bytes = src->tensor_data(t);
        w.add_tensor(t.name, t.type, shape, [bytes] { return bytes; });
    }
    const std::string path = (test::temp_dir() / (name + ".gguf")).string();
    w.write(path);
    return path;
}

TEST(Mimo2, RefusesWhatItCannotRun) {
    if (mimo2_path().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const std::vector<std::tuple<std::string, std::optional<gguf::Value>, std::string>> cases = {
        {"mimo2.attention.value_scale", gguf::Value::f32(0.5f), "value_scale"},
        {"mimo2.attention.sliding_window", std::nullopt, "sliding_window"},
        {"mimo2.expert_feed_forward_length", std::nullopt, "expert_feed_forward_length"},
        {"mimo2.nextn_predict_layers", gguf::Value::u32(3), "nextn_predict_layers"},
        {"mimo2.attention.sliding_window_pattern",
         gguf::Value::array(gguf::ValueType::BOOL, std::vector<uint8_t>{0, 1}), "one per layer"},
    };
    int i = 0;
    for (const auto& [key, value, needle] : cases) {
        const std::string path = with_key(key, value, "mimo2-bad" + std::to_string(i++));
        try {
            model::Model::load(path);
            ADD_FAILURE() << "loaded mimo2 with " << key << " changed";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace cria::runtime
