// The bert-style encoders (bert, nomic-bert) on random synthetic files:
// - the fast path's hidden states (attention both ways, post LayerNorms)
//   agree with the float64 reference forward, F32 and Q8_0 weights;
// - attention goes both ways: a later token changes an earlier one's state;
// - two sequences in one batch equal two separate runs;
// - every pooling (mean, cls, last, rank) equals the same computed from the
//   reference's hidden states (rank: the classifier head in float64);
// - an encoder refuses a context without embeddings (no text generation).

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "cria/model/model.h"
#include "cria/model/reference_forward.h"
#include "cria/model/synthetic_model.h"
#include "cria/quant/quantize.h"
#include "cria/runtime/context.h"
#include "cria/runtime/embedding.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

struct Encoder {
    std::shared_ptr<const gguf::File> file;
    std::unique_ptr<model::Model> model;
};

Encoder& encoder(const std::string& arch, ElementType type = ElementType::F32) {
    static std::map<std::string, Encoder> cache;
    const std::string key = arch + "-" + std::string(element_type_name(type));
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
    spec.weight_type = type;
    spec.stddev = 0.08f;
    spec.seed = 11;
    spec.classifier_head = arch == "bert";
    const auto path = (test::temp_dir() / ("encoder-" + key + ".gguf")).string();
    model::write_synthetic_model(spec, path);
    Encoder e;
    e.file = std::shared_ptr<const gguf::File>(gguf::File::open(path));
    e.model = model::Model::from_file(e.file);
    return cache.emplace(key, std::move(e)).first->second;
}

const std::vector<int32_t> kTokens = {2, 40, 77, 13, 250, 9, 101, 3};

ContextParams params(Pooling pooling = Pooling::None) {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = ElementType::F32;
    cp.embeddings = true;
    cp.pooling = pooling;
    return cp;
}

double nmse(std::span<const float> got, const std::vector<float>& want) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        ref += double(want[i]) * want[i];
    }
    return err / ref;
}

class EncoderArch : public ::testing::TestWithParam<std::string> {};

TEST_P(EncoderArch, HiddenStatesMatchTheReference) {
    for (ElementType type : {ElementType::F32, ElementType::Q8_0}) {
        Encoder& e = encoder(GetParam(), type);
        const auto want = model::reference_forward(*e.file, kTokens);
        ASSERT_EQ(want.size(), kTokens.size());
        ASSERT_EQ(want[0].size(), e.model->hparams().n_embd);
        Context ctx(*e.model, params());
        ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
        const double tol = type == ElementType::F32 ? 1e-8 : 1e-4;
        for (size_t i = 0; i < kTokens.size(); ++i)
            EXPECT_LT(nmse(ctx.embeddings(static_cast<int32_t>(i)), want[i]), tol)
                << element_type_name(type) << " position " << i;
    }
}

TEST_P(EncoderArch, AttentionGoesBothWays) {
    Encoder& e = encoder(GetParam());
    std::vector<int32_t> other = kTokens;
    other.back() = 5;
    Context a(*e.model, params()), b(*e.model, params());
    ASSERT_EQ(a.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    ASSERT_EQ(b.decode(Batch::from_tokens(other, 0, 0, true)), 0);
    const auto x = a.embeddings(0), y = b.embeddings(0);
    double diff = 0;
    for (size_t c = 0; c < x.size(); ++c) diff += std::abs(x[c] - y[c]);
    EXPECT_GT(diff, 1e-3) << "the first token's state ignores the last token";
}

TEST_P(EncoderArch, TwoSequencesInOneBatchEqualSeparateRuns) {
    Encoder& e = encoder(GetParam());
    const std::vector<int32_t> second = {2, 60, 61, 62, 3};
    ContextParams cp = params(Pooling::Mean);
    cp.n_seq_max = 2;
    Context both(*e.model, cp);
    Batch batch;
    for (size_t i = 0; i < kTokens.size(); ++i) batch.add(kTokens[i], static_cast<int32_t>(i), {0}, true);
    for (size_t i = 0; i < second.size(); ++i) batch.add(second[i], static_cast<int32_t>(i), {1}, true);
    ASSERT_EQ(both.decode(batch), 0);
    for (int seq = 0; seq < 2; ++seq) {
        Context one(*e.model, params(Pooling::Mean));
        ASSERT_EQ(one.decode(Batch::from_tokens(seq == 0 ? kTokens : second, 0, 0, true)), 0);
        const auto want = one.embeddings_seq(0);
        EXPECT_LT(nmse(both.embeddings_seq(seq), std::vector<float>(want.begin(), want.end())), 1e-10) << seq;
    }
}

TEST_P(EncoderArch, RefusesTextGeneration) {
    Encoder& e = encoder(GetParam());
    ContextParams cp = params();
    cp.embeddings = false;
    try {
        Context ctx(*e.model, cp);
        FAIL() << "an encoder context without embeddings was accepted";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("encoder"), std::string::npos) << err.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Encoders, EncoderArch, ::testing::Values("bert", "nomic-bert"),
                         [](const auto& info) { return info.param == "bert" ? std::string("bert") : std::string("nomic_bert"); });

TEST(EncoderPooling, MeanClsLastEqualTheReferenceStates) {
    Encoder& e = encoder("bert");
    const auto states = model::reference_forward(*e.file, kTokens);
    const size_t E = states[0].size(), n = states.size();
    std::vector<float> mean(E, 0.0f);
    for (const auto& s : states)
        for (size_t c = 0; c < E; ++c) mean[c] += s[c] / static_cast<float>(n);
    const std::pair<Pooling, std::vector<float>> cases[] = {
        {Pooling::Mean, mean}, {Pooling::Cls, states.front()}, {Pooling::Last, states.back()}};
    for (const auto& [pooling, want] : cases) {
        Context ctx(*e.model, params(pooling));
        ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
        EXPECT_LT(nmse(ctx.embeddings_seq(0), want), 1e-8) << pooling_name(pooling);
    }
}

// A tensor of the file dequantised (row after row).
std::vector<float> dequantized(const gguf::File& f, const char* name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (t == nullptr) throw Error(std::string("missing ") + name);
    std::vector<float> out(t->n_elements());
    quant::dequantize_row(t->type, f.tensor_data(*t).data(), out.data(), static_cast<int64_t>(out.size()));
    return out;
}

TEST(EncoderPooling, RankIsTheClassifierHeadOnTheFirstToken) {
    Encoder& e = encoder("bert");
    const auto states = model::reference_forward(*e.file, kTokens);
    // The head in float64 from the file's tensors (not the packed weights).
    const gguf::File& f = *e.file;
    const auto cls = dequantized(f, "cls.weight"), cls_b = dequantized(f, "cls.bias"),
               out = dequantized(f, "cls.output.weight"), out_b = dequantized(f, "cls.output.bias");
    const size_t E = states[0].size();
    double score = out_b[0];
    for (size_t r = 0; r < E; ++r) {
        double h = cls_b[r];
        for (size_t c = 0; c < E; ++c) h += double(cls[r * E + c]) * states[0][c];
        score += std::tanh(h) * out[r];
    }
    Context ctx(*e.model, params(Pooling::Rank));
    ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    const auto got = ctx.embeddings_seq(0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NEAR(got[0], score, 1e-4 * std::max(1.0, std::abs(score)));
}

TEST(EncoderPooling, RankWithOnlyTheOutputLayerIsADirectProjection) {
    // BertForSequenceClassification's single linear classifier: llama.cpp
    // applies cls.output (and its bias) to the first token, no tanh.
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("bert");
    spec.stddev = 0.08f;
    spec.seed = 11;
    spec.classifier_head = true;
    spec.classifier_direct = true;
    const auto path = (test::temp_dir() / "encoder-bert-direct-head.gguf").string();
    model::write_synthetic_model(spec, path);
    const auto file = std::shared_ptr<const gguf::File>(gguf::File::open(path));
    const auto m = model::Model::from_file(file);
    const auto states = model::reference_forward(*file, kTokens);
    const auto out = dequantized(*file, "cls.output.weight"), out_b = dequantized(*file, "cls.output.bias");
    double score = out_b[0];
    for (size_t c = 0; c < states[0].size(); ++c) score += double(out[c]) * states[0][c];
    Context ctx(*m, params(Pooling::Rank));
    ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    const auto got = ctx.embeddings_seq(0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NEAR(got[0], score, 1e-4 * std::max(1.0, std::abs(score)));
}

TEST(EncoderPooling, RankNeedsAClassifierHead) {
    Encoder& e = encoder("nomic-bert");
    EXPECT_THROW(Context(*e.model, params(Pooling::Rank)), Error);
}

TEST(EncoderPooling, NamesRoundTrip) {
    for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Rank})
        EXPECT_EQ(parse_pooling(pooling_name(p)), p);
    EXPECT_THROW(parse_pooling("max"), Error);
}

TEST(EncoderFile, BadPoolingTypeIsAClearError) {
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("bert");
    spec.pooling_type = 9;
    const auto path = (test::temp_dir() / "encoder-bad-pooling.gguf").string();
    model::write_synthetic_model(spec, path);
    try {
        model::Model::load(path);
        FAIL() << "pooling_type 9 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("pooling_type"), std::string::npos) << e.what();
    }
    spec.pooling_type = 2;  // cls: the file's choice is the context's default
    model::write_synthetic_model(spec, path);
    EXPECT_EQ(model_pooling(model::Model::load(path)->hparams(), Pooling::Mean), Pooling::Cls);
}

// A copy of `from` without the metadata key `dropped`.
void copy_without_key(const std::string& from, const std::string& to, const std::string& dropped) {
    const std::shared_ptr<const gguf::File> f(gguf::File::open(from));
    gguf::Writer w;
    for (const auto& [key, value] : f->metadata())
        if (key != dropped) w.add_metadata(key, value);
    for (const gguf::TensorInfo& t : f->tensors())
        w.add_tensor(t.name, t.type, std::span<const uint64_t>(t.ne.data(), t.n_dims), [f, t] { return f->tensor_data(t); });
    w.write(to);
}

void expect_load_error_naming(const std::string& path, const std::string& key) {
    try {
        model::Model::load(path);
        ADD_FAILURE() << path << " loaded without " << key;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
}

TEST(EncoderFile, KeysLlamaCppRequiresAreRequired) {
    // llama.cpp's loader: attention.causal for both families, pooling_type
    // for nomic-bert; bert without pooling_type loads (pooling none then).
    for (const std::string arch : {"bert", "nomic-bert"}) {
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
        spec.pooling_type = 1;
        const auto path = (test::temp_dir() / ("encoder-keys-" + arch + ".gguf")).string();
        const auto cut = (test::temp_dir() / ("encoder-keys-cut-" + arch + ".gguf")).string();
        model::write_synthetic_model(spec, path);
        copy_without_key(path, cut, arch + ".attention.causal");
        expect_load_error_naming(cut, arch + ".attention.causal");
        copy_without_key(path, cut, arch + ".pooling_type");
        if (arch == "nomic-bert") {
            expect_load_error_naming(cut, "nomic-bert.pooling_type");
        } else {
            EXPECT_EQ(model_pooling(model::Model::load(cut)->hparams(), Pooling::None), Pooling::None);
        }
    }
}

TEST(EmbeddingNormalize, AsLlamaCppsEmbdNormalize) {
    const std::vector<float> x = {3.0f, -4.0f, 0.0f, 12.0f};
    const auto normed = [&](int mode) {
        std::vector<float> v = x;
        normalize_embedding(v, mode);
        return v;
    };
    EXPECT_EQ(normed(-1), x);
    EXPECT_FLOAT_EQ(normed(0)[3], 32760.0f);       // max |x| scaled to int16
    EXPECT_FLOAT_EQ(normed(1)[1], -4.0f / 19.0f);  // taxicab
    EXPECT_FLOAT_EQ(normed(2)[0], 3.0f / 13.0f);   // euclidean
    const double p3 = std::cbrt(27.0 + 64.0 + 1728.0);
    EXPECT_NEAR(normed(3)[3], 12.0 / p3, 1e-6);
    std::vector<float> zero(3, 0.0f);
    normalize_embedding(zero, 2);
    EXPECT_EQ(zero, std::vector<float>(3, 0.0f));
    EXPECT_THROW(normalize_embedding(zero, -2), Error);
}

TEST(EmbeddingNormalize, EmbedderRefusesEmptyAndLongInputs) {
    Encoder& e = encoder("bert");
    Embedder embedder(*e.model, Pooling::Mean, 2, 16);
    EXPECT_THROW(embedder.embed(std::vector<TokenId>{}), Error);
    EXPECT_THROW(embedder.embed(std::vector<TokenId>(17, 5)), Error);
    EXPECT_EQ(embedder.embed(std::vector<TokenId>(16, 5)).size(), 1u);
    Embedder per_token(*e.model, Pooling::None, 2, 16);
    EXPECT_EQ(per_token.embed(kTokens).size(), kTokens.size());
}

}  // namespace
}  // namespace cria::runtime
