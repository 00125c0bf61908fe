// draft-eagle3, draft-dflash, draft-dspark and draft-mtp on the trained heads of
// ../shared/testdata/drafter-fixtures (austen-7m target): greedy output
// equals plain decoding, and every
// verification step drafts and accepts what llama.cpp's did (README §6:
// llama-speculative-simple's driver, adaptive drafting off); plus the
// checks on files that do not fit the target.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <memory>
#include <sstream>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/chain.h"
#include "cria/spec/dflash.h"
#include "cria/spec/eagle3.h"
#include "cria/spec/mtp.h"
#include "cria/spec/registry.h"
#include "cria/spec/speculative.h"
#include "cria/spec/step.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

std::filesystem::path fixtures_dir() {
    if (const char* env = std::getenv("CRIA_DRAFTER_FIXTURES")) return env;
    const auto dir = test::source_dir().parent_path() / "shared" / "testdata" / "drafter-fixtures";
    return std::filesystem::exists(dir / "eagle3-austen-7m.gguf") ? dir : std::filesystem::path();
}

const model::Model& austen() {
    static const auto m = model::Model::load(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    return *m;
}

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The body of the JSON array after "key": (the fixture's flat arrays only).
std::string json_array(const std::string& json, const std::string& key) {
    const size_t k = json.find("\"" + key + "\"");
    if (k == std::string::npos) throw Error("fixture: no key " + key);
    const size_t open = json.find('[', k), close = json.find(']', open);
    return json.substr(open + 1, close - open - 1);
}

std::vector<int> ints(const std::string& body) {
    std::vector<int> out;
    std::stringstream ss(body);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
    return out;
}

std::vector<std::string> strings(const std::string& body) {
    std::vector<std::string> out;
    for (size_t q = body.find('"'); q != std::string::npos; q = body.find('"', body.find('"', q + 1) + 1))
        out.push_back(body.substr(q + 1, body.find('"', q + 1) - q - 1));
    return out;
}

runtime::ContextParams context_params() {
    runtime::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;  // F16 cache, as llama.cpp's runs
    return cp;
}

sampling::Chain greedy(const vocab::Vocab& vocab) {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    return sampling::build_chain(sp, cc);
}

struct StepsRun {
    std::vector<std::string> steps;  // "accepted/drafted" per verification step
    std::vector<TokenId> generated;
};

// llama-speculative-simple's loop (fixture README §6) on the speculative step.
StepsRun run_llama_protocol(const std::vector<TokenId>& prompt, int n_predict, int n_max, float p_min,
                            SpecType type = SpecType::Eagle3, const std::string& file = "eagle3-austen-7m.gguf",
                            const model::Model& m = austen()) {
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    runtime::Context ctx(m, context_params());
    SpecParams params;
    params.types = {type};
    if (!file.empty()) params.draft_model = (fixtures_dir() / file).string();  // else the target's own file
    params.draft.n_max = params.n_max = n_max;
    params.draft.p_min = p_min;
    auto drafters = make_drafters(params, ctx, vocab);
    EXPECT_EQ(drafters.size(), 1u);
    SpeculativeStep step({drafters[0].get()}, false, static_cast<int32_t>(vocab.size()));
    ctx.set_capture_layers(step.feature_layers());
    const auto& layers = ctx.params().capture_layers;
    const size_t n_feat = layers.size(), n_embd = m.hparams().n_embd;

    // Prompt but its last token, features of every row.
    runtime::Batch batch;
    for (size_t i = 0; i + 1 < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), {0}, true);
    EXPECT_EQ(ctx.decode(batch), 0);
    std::vector<float> prompt_features(ctx.features(0).data(),
                                       ctx.features(0).data() + (prompt.size() - 1) * n_feat * n_embd);
    std::vector<TokenId> history(prompt.begin(), prompt.end() - 1);
    StepRequest request;
    request.n_max = n_max;
    request.sampling.temp = 0.0f;
    step.begin(0, history, request);
    step.set_target_features({prompt_features.data(), history.size(), n_feat, n_embd, 0, layers.data()});
    auto chain = greedy(vocab);
    ContextMemory memory(ctx);
    TokenId last = prompt.back();
    StepsRun run;
    const auto emit = [&](TokenId t, std::span<const float>) {
        run.generated.push_back(t);
        return !vocab.is_eog(t);
    };
    while (static_cast<int>(run.generated.size()) <= n_predict) {
        const int n_past = static_cast<int>(history.size());
        const int cap = std::max(0, std::min(512 - n_past - 2, n_predict - static_cast<int>(run.generated.size()) - 1));
        batch.clear();
        step.prepare(history, last, cap > 0 ? cap : n_max, memory, batch);
        EXPECT_EQ(ctx.decode(batch), 0);
        const auto out = step.finish([&ctx](int i) { return ctx.logits(i); }, chain, 1.0, history, emit);
        run.steps.push_back(std::to_string(out.n_accepted) + "/" + std::to_string(out.n_drafted));
        step.set_target_features({ctx.features(0).data(), static_cast<size_t>(out.n_accepted) + 1, n_feat, n_embd,
                                  n_past, layers.data()});
        last = out.next;
        if (out.done) break;
    }
    return run;
}

class Eagle3Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Eagle3Fixture, StepsAndTextMatchLlamaCpp) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const std::string json = read_text(fixtures_dir() / "results" / (GetParam() + ".json"));
    const std::vector<TokenId> prompt = ints(json_array(json, "prompt_ids"));
    const auto expected_steps = strings(json_array(json, "steps_accepted_over_drafted"));
    const std::vector<TokenId> expected_ids = ints(json_array(json, "generated_ids"));
    const float p_min = GetParam().find("pmin0.3") != std::string::npos ? 0.3f : 0.0f;
    const auto run = run_llama_protocol(prompt, 96, 4, p_min);
    EXPECT_EQ(run.generated, expected_ids);
    EXPECT_EQ(run.steps, expected_steps);
}

INSTANTIATE_TEST_SUITE_P(Runs, Eagle3Fixture,
                         ::testing::Values("eagle3/p1", "eagle3/p2", "eagle3/p3", "eagle3/p4", "eagle3-pmin0.3/p1",
                                           "eagle3-pmin0.3/p2", "eagle3-pmin0.3/p3", "eagle3-pmin0.3/p4"),
                         [](const auto& info) {
                             std::string s = info.param;
                             for (char& c : s)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

class DflashFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(DflashFixture, StepsAndTextMatchLlamaCpp) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const std::string json = read_text(fixtures_dir() / "results" / (GetParam() + ".json"));
    const std::vector<TokenId> prompt = ints(json_array(json, "prompt_ids"));
    const auto expected_steps = strings(json_array(json, "steps_accepted_over_drafted"));
    const std::vector<TokenId> expected_ids = ints(json_array(json, "generated_ids"));
    const float p_min = GetParam().find("pmin0.3") != std::string::npos ? 0.3f : 0.0f;
    const auto run = run_llama_protocol(prompt, 96, 7, p_min, SpecType::Dflash, "dflash-austen-7m.gguf");
    EXPECT_EQ(run.generated, expected_ids);
    EXPECT_EQ(run.steps, expected_steps);
}

INSTANTIATE_TEST_SUITE_P(Runs, DflashFixture,
                         ::testing::Values("dflash/p1", "dflash/p2", "dflash/p3", "dflash/p4", "dflash-pmin0.3/p1",
                                           "dflash-pmin0.3/p2", "dflash-pmin0.3/p3", "dflash-pmin0.3/p4"),
                         [](const auto& info) {
                             std::string s = info.param;
                             for (char& c : s)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

// DSpark, both block layouts (bonus-anchor n_max 7, anchor-first n_max 8),
// with the confidence cut off (p_min 0) and at p_min 0.5.
class DsparkFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(DsparkFixture, StepsAndTextMatchLlamaCpp) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const std::string json = read_text(fixtures_dir() / "results" / (GetParam() + ".json"));
    const std::vector<TokenId> prompt = ints(json_array(json, "prompt_ids"));
    const auto expected_steps = strings(json_array(json, "steps_accepted_over_drafted"));
    const std::vector<TokenId> expected_ids = ints(json_array(json, "generated_ids"));
    const bool anchor_first = GetParam().find("anchor") != std::string::npos;
    const float p_min = GetParam().find("pmin0.5") != std::string::npos ? 0.5f : 0.0f;
    const auto run = run_llama_protocol(prompt, 96, anchor_first ? 8 : 7, p_min, SpecType::Dspark,
                                        anchor_first ? "dspark-anchor-austen-7m.gguf" : "dspark-austen-7m.gguf");
    EXPECT_EQ(run.generated, expected_ids);
    EXPECT_EQ(run.steps, expected_steps);
}

INSTANTIATE_TEST_SUITE_P(Runs, DsparkFixture,
                         ::testing::Values("dspark/p1", "dspark/p2", "dspark/p3", "dspark/p4", "dspark-pmin0.5/p1",
                                           "dspark-pmin0.5/p2", "dspark-pmin0.5/p3", "dspark-pmin0.5/p4",
                                           "dspark-anchor/p1", "dspark-anchor/p2", "dspark-anchor/p3",
                                           "dspark-anchor/p4", "dspark-anchor-pmin0.5/p1", "dspark-anchor-pmin0.5/p2",
                                           "dspark-anchor-pmin0.5/p3", "dspark-anchor-pmin0.5/p4"),
                         [](const auto& info) {
                             std::string s = info.param;
                             for (char& c : s)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

// draft-mtp on mimo2-austen-1m-mtp.gguf: the NextN block is in the target's
// own file (no -md, as llama.cpp's runs), n_max 3.
const model::Model& mimo2() {
    static const auto m = model::Model::load((fixtures_dir() / "mimo2-austen-1m-mtp.gguf").string());
    return *m;
}

class MtpFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(MtpFixture, StepsAndTextMatchLlamaCpp) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const std::string json = read_text(fixtures_dir() / "results" / (GetParam() + ".json"));
    const std::vector<TokenId> prompt = ints(json_array(json, "prompt_ids"));
    const auto expected_steps = strings(json_array(json, "steps_accepted_over_drafted"));
    const std::vector<TokenId> expected_ids = ints(json_array(json, "generated_ids"));
    const auto run = run_llama_protocol(prompt, 96, 3, 0.0f, SpecType::Mtp, "", mimo2());
    EXPECT_EQ(run.generated, expected_ids);
    EXPECT_EQ(run.steps, expected_steps);
}

INSTANTIATE_TEST_SUITE_P(Runs, MtpFixture, ::testing::Values("mtp/p1", "mtp/p2", "mtp/p3", "mtp/p4"),
                         [](const auto& info) {
                             std::string s = info.param;
                             for (char& c : s)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

// The NextN block alone in its own GGUF (llama.cpp's `--mtp` split): the
// fixture's block 2 with the embedding, output norm and head, same keys.
std::string mtp_only_file() {
    const auto src = gguf::File::open((fixtures_dir() / "mimo2-austen-1m-mtp.gguf").string());
    gguf::Writer w;
    for (const auto& [k, v] : src->metadata())
        if (k != "general.alignment") w.add_metadata(k, v);
    for (const auto& t : src->tensors()) {
        if (t.name.rfind("blk.2.", 0) != 0 && t.name != "token_embd.weight" && t.name != "output_norm.weight" &&
            t.name != "output.weight")
            continue;
        const std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        const auto bytes = src->tensor_data(t);
        w.add_tensor(t.name, t.type, shape, [bytes] { return bytes; });
    }
    const std::string path = (test::temp_dir() / "mtp-austen-1m.gguf").string();
    w.write(path);
    return path;
}

TEST(Mtp, GreedyOutputEqualsPlainFromTheTargetOrASeparateFile) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = mimo2();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);
    runtime::Context plain_ctx(m, context_params());
    auto plain_chain = greedy(vocab);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 80).tokens;
    for (const bool separate : {false, true}) {
        SpecParams params;
        if (separate) params.draft_model = mtp_only_file();  // detected: it has a NextN block
        else params.types = {SpecType::Mtp};                 // the target's own block
        params.adaptive = false;
        params.n_max = params.draft.n_max = 3;
        runtime::Context ctx(m, context_params());
        auto drafters = make_drafters(params, ctx, vocab);
        ASSERT_EQ(drafters.size(), 1u);
        EXPECT_EQ(drafters[0]->name(), "mtp");
        Speculator spec(params, std::move(drafters));
        auto chain = greedy(vocab);
        EXPECT_EQ(spec.generate(ctx, vocab, chain, prompt, 80).tokens, plain) << "separate " << separate;
        EXPECT_GT(spec.metrics().tokens_accepted(), 0) << spec.metrics().format();
        EXPECT_LT(spec.metrics().tokens_accepted(), spec.metrics().tokens_drafted()) << spec.metrics().format();
    }
}

TEST(Mtp, RefusesFilesThatDoNotFit) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const auto expect_error = [](const std::string& path, const model::Model& target, const std::string& needle) {
        try {
            MtpHead::load(path, target);
            ADD_FAILURE() << path << " loaded";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    const std::string mimo_file = (fixtures_dir() / "mimo2-austen-1m-mtp.gguf").string();
    expect_error(mimo_file, austen(), "target's is 'llama'");                   // another architecture
    expect_error(austen().file().path(), austen(), "not supported yet");         // llama: no NextN graph
    EXPECT_TRUE(MtpHead::has_nextn(mimo_file));
    EXPECT_FALSE(MtpHead::has_nextn(austen().file().path()));
    EXPECT_FALSE(MtpHead::has_nextn((fixtures_dir() / "dspark-austen-7m.gguf").string()));
}

TEST(Eagle3, GreedyOutputEqualsPlainThroughTheSpeculator) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = austen();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);
    runtime::Context plain_ctx(m, context_params());
    auto plain_chain = greedy(vocab);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 80).tokens;

    SpecParams params;  // no --spec-type: detected from the file
    params.draft_model = (fixtures_dir() / "eagle3-austen-7m.gguf").string();
    params.adaptive = false;
    params.draft.p_min = 0.0f;
    params.n_max = params.draft.n_max = 5;
    runtime::Context ctx(m, context_params());
    auto drafters = make_drafters(params, ctx, vocab);
    ASSERT_EQ(drafters.size(), 1u);
    EXPECT_EQ(drafters[0]->name(), "eagle3");
    Speculator spec(params, std::move(drafters));
    auto chain = greedy(vocab);
    const auto out = spec.generate(ctx, vocab, chain, prompt, 80).tokens;
    EXPECT_EQ(out, plain);
    EXPECT_GT(spec.metrics().tokens_accepted(), 0) << spec.metrics().format();
    EXPECT_LT(spec.metrics().tokens_accepted(), spec.metrics().tokens_drafted()) << spec.metrics().format();
}

TEST(Eagle3, RefusesADraftForAnotherTarget) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    // austen-1m has another hidden size (128): the feature width does not fit.
    const auto small = model::Model::load(test::model_path("austen-1m/austen-1m-f32.gguf").string());
    try {
        Eagle3Head::load((fixtures_dir() / "eagle3-austen-7m.gguf").string(), *small);
        FAIL() << "loaded an EAGLE-3 head trained for another target";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("target_hidden_size"), std::string::npos) << e.what();
    }
    // Not an eagle3 file at all.
    EXPECT_THROW(Eagle3Head::load(test::model_path("austen-1m/austen-1m-f32.gguf").string(), austen()), Error);
    EXPECT_FALSE(Eagle3Head::is_eagle3_file(test::model_path("austen-1m/austen-1m-f32.gguf").string()));
    EXPECT_TRUE(Eagle3Head::is_eagle3_file((fixtures_dir() / "eagle3-austen-7m.gguf").string()));
}

// The fixture's head written again with one change: a key replaced (or
// dropped when `value` is null), a tensor dropped, reshaped or refilled.
struct Mutation {
    std::string key;
    std::optional<gguf::Value> value;
    std::string tensor;                    // a tensor to change
    bool drop_tensor = false;
    std::vector<uint64_t> shape;           // non-empty: this shape instead
    std::vector<uint8_t> bytes;            // non-empty: these bytes instead
};

std::string mutated_head(const Mutation& m, const std::string& name,
                         const std::string& source = "eagle3-austen-7m.gguf") {
    const auto src = gguf::File::open((fixtures_dir() / source).string());
    gguf::Writer w;
    for (const auto& [k, v] : src->metadata()) {
        if (k == "general.alignment") continue;
        if (k == m.key) {
            if (m.value) w.add_metadata(k, *m.value);
            continue;
        }
        w.add_metadata(k, v);
    }
    for (const auto& t : src->tensors()) {
        if (t.name == m.tensor && m.drop_tensor) continue;
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (t.name == m.tensor && !m.shape.empty()) shape = m.shape;
        const auto bytes = src->tensor_data(t);
        const std::span<const uint8_t> data =
            t.name == m.tensor && !m.bytes.empty() ? std::span<const uint8_t>(m.bytes) : bytes;
        w.add_tensor(t.name, t.type, shape, [data] { return data; });
    }
    const std::string path = (test::temp_dir() / (name + ".gguf")).string();
    w.write(path);
    return path;
}

TEST(Eagle3, RefusesMalformedHeadsWithAClearError) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    std::vector<uint8_t> d2t_dup(2048 * 8, 0);  // every entry 0: not distinct
    std::vector<uint8_t> d2t_big(2048 * 8, 0);
    for (size_t j = 0; j < 2048; ++j) {
        const int64_t id = static_cast<int64_t>(j) + 4000;  // past the 4096-token vocabulary at the end
        std::memcpy(&d2t_big[j * 8], &id, 8);
    }
    const std::vector<std::pair<Mutation, std::string>> cases = {
        {{"eagle3.target_layers", gguf::Value::array(gguf::ValueType::I32, std::vector<int32_t>{2, 4})},
         "exactly 3"},
        {{"eagle3.target_layers", gguf::Value::array(gguf::ValueType::I32, std::vector<int32_t>{2, 4, 99})},
         "outside the target's layers"},
        {{"eagle3.target_hidden_size", std::nullopt}, "target_hidden_size"},
        {{"eagle3.block_count", gguf::Value::u32(2)}, "block_count"},
        {{"", std::nullopt, "blk.0.attn_q.weight", true}, "missing tensor 'blk.0.attn_q.weight'"},
        {{"", std::nullopt, "blk.0.attn_q.weight", false, {256, 512}}, "blk.0.attn_q.weight' has shape"},
        {{"", std::nullopt, "d2t", false, {}, d2t_dup}, "d2t entry"},
        {{"", std::nullopt, "d2t", false, {}, d2t_big}, "d2t entry"},
        {{"", std::nullopt, "d2t", true}, "no d2t map"},
    };
    int i = 0;
    for (const auto& [m, needle] : cases) {
        const std::string path = mutated_head(m, "bad" + std::to_string(i++));
        try {
            Eagle3Head::load(path, austen());
            ADD_FAILURE() << "loaded a head with " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    }
}

TEST(Dflash, GreedyOutputEqualsPlainAndTheFileIsDetected) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = austen();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);
    runtime::Context plain_ctx(m, context_params());
    auto plain_chain = greedy(vocab);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 80).tokens;
    SpecParams params;
    params.draft_model = (fixtures_dir() / "dflash-austen-7m.gguf").string();
    params.adaptive = false;
    params.draft.p_min = 0.0f;
    params.n_max = params.draft.n_max = 16;  // clamped to block_size - 1
    runtime::Context ctx(m, context_params());
    auto drafters = make_drafters(params, ctx, vocab);
    ASSERT_EQ(drafters.size(), 1u);
    EXPECT_EQ(drafters[0]->name(), "dflash");
    EXPECT_EQ(drafters[0]->n_max(), 7);
    Speculator spec(params, std::move(drafters));
    auto chain = greedy(vocab);
    EXPECT_EQ(spec.generate(ctx, vocab, chain, prompt, 80).tokens, plain);
    EXPECT_GT(spec.metrics().tokens_accepted(), 0) << spec.metrics().format();
    EXPECT_LT(spec.metrics().tokens_accepted(), spec.metrics().tokens_drafted()) << spec.metrics().format();
}

TEST(Dflash, RefusesWhatItCannotRun) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const auto expect_error = [](const std::string& path, const model::Model& target, const std::string& needle) {
        try {
            DflashHead::load(path, target);
            ADD_FAILURE() << path << " loaded";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    const auto small = model::Model::load(test::model_path("austen-1m/austen-1m-f32.gguf").string());
    expect_error((fixtures_dir() / "dflash-austen-7m.gguf").string(), *small, "another model");
    expect_error((fixtures_dir() / "eagle3-austen-7m.gguf").string(), austen(), "expected 'dflash'");
}

TEST(Dspark, GreedyOutputEqualsPlainAndTheTypeIsDetected) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = austen();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);
    runtime::Context plain_ctx(m, context_params());
    auto plain_chain = greedy(vocab);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 80).tokens;
    // Bonus-anchor drafts at most block_size - 1, anchor-first block_size.
    for (const auto& [file, n_max] : {std::pair{"dspark-austen-7m.gguf", 7}, {"dspark-anchor-austen-7m.gguf", 8}}) {
        SpecParams params;  // no --spec-type: a dflash file with markov_w1 is DSpark
        params.draft_model = (fixtures_dir() / file).string();
        params.adaptive = false;
        params.draft.p_min = 0.5f;
        params.n_max = params.draft.n_max = 16;
        runtime::Context ctx(m, context_params());
        auto drafters = make_drafters(params, ctx, vocab);
        ASSERT_EQ(drafters.size(), 1u);
        EXPECT_EQ(drafters[0]->name(), "dspark");
        EXPECT_EQ(drafters[0]->n_max(), n_max) << file;
        Speculator spec(params, std::move(drafters));
        auto chain = greedy(vocab);
        EXPECT_EQ(spec.generate(ctx, vocab, chain, prompt, 80).tokens, plain) << file;
        EXPECT_GT(spec.metrics().tokens_accepted(), 0) << spec.metrics().format();
        EXPECT_LT(spec.metrics().tokens_accepted(), spec.metrics().tokens_drafted()) << spec.metrics().format();
    }
}

TEST(Dspark, RefusesTheWrongTypeAndAMissingConfidenceHead) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = austen();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    runtime::Context ctx(m, context_params());
    const auto expect_error = [&](SpecType type, const std::string& path, const std::string& needle) {
        SpecParams params;
        params.types = {type};
        params.draft_model = path;
        try {
            make_drafters(params, ctx, vocab);
            ADD_FAILURE() << path << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_error(SpecType::Dflash, (fixtures_dir() / "dspark-austen-7m.gguf").string(), "use draft-dspark");
    expect_error(SpecType::Dspark, (fixtures_dir() / "dflash-austen-7m.gguf").string(), "markov_w1.weight");
    expect_error(SpecType::Dspark,
                 mutated_head({"", std::nullopt, "conf_proj.weight", true}, "dspark-noconf", "dspark-austen-7m.gguf"),
                 "conf_proj.weight");
    expect_error(SpecType::Dspark,
                 mutated_head({"", std::nullopt, "markov_w2.weight", false, {128, 2048}}, "dspark-w2",
                              "dspark-austen-7m.gguf"),
                 "markov_w2.weight' has shape");
}

// At temperature 1 the heads' drafts carry no probabilities, so the step
// samples the target's rows in order and keeps drafts equal to the samples:
// the output is plain sampling's with the same seed (the target's
// distribution exactly, not just statistically).
TEST(HeadDrafters, TemperatureOneOutputIsPlainSamplingWithTheSameSeed) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = austen();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);
    sampling::SamplingParams sp;
    sp.temp = 1.0f;
    sp.seed = 7;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    runtime::Context plain_ctx(m, context_params());
    auto plain_chain = sampling::build_chain(sp, cc);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 60).tokens;
    for (const char* file :
         {"eagle3-austen-7m.gguf", "dflash-austen-7m.gguf", "dspark-austen-7m.gguf", "dspark-anchor-austen-7m.gguf"}) {
        SpecParams params;
        params.draft_model = (fixtures_dir() / file).string();
        params.adaptive = false;
        params.draft.p_min = 0.0f;
        params.n_max = params.draft.n_max = 4;
        runtime::Context ctx(m, context_params());
        Speculator spec(params, make_drafters(params, ctx, vocab));
        spec.set_sampling(sp);
        auto chain = sampling::build_chain(sp, cc);
        EXPECT_EQ(spec.generate(ctx, vocab, chain, prompt, 60).tokens, plain) << file;
        EXPECT_GT(spec.metrics().tokens_accepted(), 0) << file << spec.metrics().format();
    }
}

// The same for draft-mtp on its mimo2 target.
TEST(Mtp, TemperatureOneOutputIsPlainSamplingWithTheSameSeed) {
    if (fixtures_dir().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const model::Model& m = mimo2();
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);
    sampling::SamplingParams sp;
    sp.temp = 1.0f;
    sp.seed = 7;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    runtime::Context plain_ctx(m, context_params());
    auto plain_chain = sampling::build_chain(sp, cc);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 60).tokens;
    SpecParams params;
    params.types = {SpecType::Mtp};
    params.adaptive = false;
    params.n_max = params.draft.n_max = 3;
    runtime::Context ctx(m, context_params());
    Speculator spec(params, make_drafters(params, ctx, vocab));
    spec.set_sampling(sp);
    auto chain = sampling::build_chain(sp, cc);
    EXPECT_EQ(spec.generate(ctx, vocab, chain, prompt, 60).tokens, plain);
    EXPECT_GT(spec.metrics().tokens_accepted(), 0) << spec.metrics().format();
}

TEST(Eagle3, GatherFeaturesReordersLayers) {
    // Two tokens, captured layers {1, 4, 6}, two floats each; the head wants {6, 1, 4}.
    std::vector<float> data(2 * 3 * 2);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
    const std::vector<uint32_t> captured{1, 4, 6};
    FeaturesView v{data.data(), 2, 3, 2, 0, captured.data()};
    std::vector<float> out;
    gather_features(v, captured, {6, 1, 4}, out);
    EXPECT_EQ(out, (std::vector<float>{4, 5, 0, 1, 2, 3, 10, 11, 6, 7, 8, 9}));
    EXPECT_THROW(gather_features(v, captured, {6, 2, 4}, out), Error);
}

}  // namespace
}  // namespace cria::spec
