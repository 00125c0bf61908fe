// cria quantize on real and hand-made models: pure types equal the reference
// quantizer tensor by tensor, metadata as llama.cpp writes it, requantizing,
// fallbacks, threads, and how close the result stays to the source.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cria/core/error.h"
#include "cria/gguf/writer.h"
#include "cria/gguf/gguf.h"
#include "cria/quant/quantize.h"
#include "cria/quantizer/quantize_model.h"
#include "support/test_paths.h"

namespace cria::quantizer {
namespace {

const std::string kAusten = test::model_path("austen-7m/austen-7m-f32.gguf").string();

std::string temp(const std::string& name) { return (test::temp_dir() / name).string(); }

QuantizeOptions options_for(FileType ft, bool pure = false, int threads = 2) {
    QuantizeOptions o;
    o.mix.file_type = ft;
    o.mix.pure = pure;
    o.n_threads = threads;
    return o;
}

std::vector<float> as_floats(const gguf::File& f, const gguf::TensorInfo& t) {
    std::vector<float> out(t.n_elements());
    const auto bytes = f.tensor_data(t);
    const size_t row = *row_size_bytes(t.type, t.ne[0]);
    for (uint64_t r = 0; r < t.n_elements() / t.ne[0]; ++r)
        quant::dequantize_row(t.type, bytes.data() + r * row, out.data() + r * t.ne[0], static_cast<int64_t>(t.ne[0]));
    return out;
}

// Every tensor of `out` is the source tensor quantized with quantize_rows
// (2-D weights) or copied byte for byte (everything else).
void expect_pure(const std::string& out_path, ElementType type) {
    auto src = gguf::File::open(kAusten);
    auto out = gguf::File::open(out_path);
    ASSERT_EQ(out->tensors().size(), src->tensors().size());
    for (const gguf::TensorInfo& s : src->tensors()) {
        const gguf::TensorInfo* o = out->find_tensor(s.name);
        ASSERT_NE(o, nullptr) << s.name;
        const auto got = out->tensor_data(*o);
        if (s.n_dims == 1) {
            EXPECT_EQ(o->type, s.type) << s.name;
            const auto want = src->tensor_data(s);
            EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << s.name;
            continue;
        }
        ASSERT_EQ(o->type, type) << s.name;
        const auto values = as_floats(*src, s);
        std::vector<uint8_t> want(got.size());
        quant::quantize_rows(type, values.data(), want.data(), static_cast<int64_t>(s.ne[1]), static_cast<int64_t>(s.ne[0]));
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << s.name;
    }
}

TEST(QuantizeModel, PureQ4_0EqualsReferenceQuantizer) {
    const std::string out = temp("austen-q4_0.gguf");
    quantize_model(kAusten, out, options_for(FileType::MOSTLY_Q4_0, true));
    expect_pure(out, ElementType::Q4_0);
}

TEST(QuantizeModel, PureQ8_0EqualsReferenceQuantizer) {
    const std::string out = temp("austen-q8_0.gguf");
    quantize_model(kAusten, out, options_for(FileType::MOSTLY_Q8_0, true, 1));
    expect_pure(out, ElementType::Q8_0);
}

TEST(QuantizeModel, MetadataAsLlamaCppWritesIt) {
    const std::string out = temp("austen-meta.gguf");
    quantize_model(kAusten, out, options_for(FileType::MOSTLY_Q4_K_M));
    auto src = gguf::File::open(kAusten);
    auto q = gguf::File::open(out);
    EXPECT_EQ(q->get_u32("general.file_type"), 15u);
    EXPECT_EQ(q->get_u32("general.quantization_version"), 2u);
    ASSERT_EQ(q->metadata().size(), src->metadata().size());
    // Same keys and values except the two set by the quantizer, which move to the end.
    size_t n = q->metadata().size();
    EXPECT_EQ(q->metadata()[n - 2].first, "general.quantization_version");
    EXPECT_EQ(q->metadata()[n - 1].first, "general.file_type");
    for (const auto& [key, value] : src->metadata()) {
        if (key == "general.file_type" || key == "general.quantization_version") continue;
        const gguf::Value* v = q->find(key);
        ASSERT_NE(v, nullptr) << key;
        EXPECT_TRUE(*v == value) << key;
    }
    // llama.cpp's order: tensors outside blocks first (by name), then block by block.
    EXPECT_EQ(q->tensors().front().name, "output_norm.weight");
    EXPECT_EQ(q->tensors()[2].name, "blk.0.attn_k.weight");
}

TEST(QuantizeModel, DequantizesCloseToSource) {
    const std::string out = temp("austen-q4km.gguf");
    const QuantizeSummary s = quantize_model(kAusten, out, options_for(FileType::MOSTLY_Q4_K_M));
    EXPECT_GT(s.bpw_after(), 4.5);
    EXPECT_LT(s.bpw_after(), 6.0);
    EXPECT_DOUBLE_EQ(s.bpw_before(), 32.0);
    auto src = gguf::File::open(kAusten);
    auto q = gguf::File::open(out);
    for (const gguf::TensorInfo& t : q->tensors()) {
        const auto a = as_floats(*src, *src->find_tensor(t.name));
        const auto b = as_floats(*q, t);
        double err = 0, norm = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            err += (a[i] - b[i]) * double(a[i] - b[i]);
            norm += a[i] * double(a[i]);
        }
        // Q4_K keeps about 1/16 of the scale of the weights in error; Q6_K far less.
        EXPECT_LT(std::sqrt(err / norm), 0.12) << t.name << " " << element_type_name(t.type);
    }
}

TEST(QuantizeModel, SameBytesWithOneOrThreeThreads) {
    const std::string a = temp("t1.gguf"), b = temp("t3.gguf");
    quantize_model(kAusten, a, options_for(FileType::MOSTLY_Q3_K_M, false, 1));
    quantize_model(kAusten, b, options_for(FileType::MOSTLY_Q3_K_M, false, 3));
    auto fa = gguf::File::open(a), fb = gguf::File::open(b);
    ASSERT_EQ(fa->file_size(), fb->file_size());
    for (size_t i = 0; i < fa->tensors().size(); ++i) {
        const auto x = fa->tensor_data(fa->tensors()[i]), y = fb->tensor_data(fb->tensors()[i]);
        EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << fa->tensors()[i].name;
    }
}

TEST(QuantizeModel, RequantizeRefusedUnlessAllowed) {
    const std::string q8 = temp("rq8.gguf"), q4 = temp("rq4.gguf");
    quantize_model(kAusten, q8, options_for(FileType::MOSTLY_Q8_0));
    try {
        quantize_model(q8, q4, options_for(FileType::MOSTLY_Q4_0));
        FAIL() << "requantizing was not refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--allow-requantize"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(q4));
    QuantizeOptions o = options_for(FileType::MOSTLY_Q4_0, true);
    o.allow_requantize = true;
    quantize_model(q8, q4, o);
    auto f = gguf::File::open(q4);
    EXPECT_EQ(f->find_tensor("blk.3.ffn_up.weight")->type, ElementType::Q4_0);
    // Same type as the input: copied, even without --allow-requantize.
    quantize_model(q8, temp("rq8b.gguf"), options_for(FileType::MOSTLY_Q8_0, true));
}

// A model written by hand with rows that no 256-block (and one that no
// 32-block) divides, as some real models have (e.g. ffn widths like 11008/4).
std::string odd_model(const std::string& path) {
    gguf::Writer w;
    w.add_metadata("general.architecture", gguf::Value::string("llama"));
    w.add_metadata("llama.block_count", gguf::Value::u32(1));
    w.add_metadata("llama.attention.head_count", gguf::Value::u32(2));
    w.add_metadata("llama.attention.head_count_kv", gguf::Value::u32(2));
    static std::vector<float> data;
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    data.resize(96 * 64);
    for (float& x : data) x = dist(rng);
    auto add = [&](const std::string& name, uint64_t ne0, uint64_t ne1) {
        const std::vector<uint64_t> shape = ne1 ? std::vector<uint64_t>{ne0, ne1} : std::vector<uint64_t>{ne0};
        const size_t n = ne0 * (ne1 ? ne1 : 1) * sizeof(float);
        w.add_tensor(name, ElementType::F32, shape,
                     [n]() { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), n); });
    };
    add("token_embd.weight", 96, 64);
    add("blk.0.attn_norm.weight", 96, 0);
    add("blk.0.attn_q.weight", 96, 64);
    add("blk.0.ffn_down.weight", 40, 96);
    add("output.weight", 96, 64);
    w.write(path);
    return path;
}

TEST(QuantizeModel, FallbackForRowsThatAreNotWholeBlocks) {
    const std::string in = odd_model(temp("odd.gguf")), out = temp("odd-q4km.gguf");
    const QuantizeSummary s = quantize_model(in, out, options_for(FileType::MOSTLY_Q4_K_M));
    auto f = gguf::File::open(out);
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, ElementType::Q5_0);  // q4_K -> q5_0
    EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, ElementType::F16);  // not even 32 fits
    EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, ElementType::F32);
    EXPECT_EQ(f->find_tensor("output.weight")->type, ElementType::Q8_0);  // output rule, no fallback note
    EXPECT_EQ(f->find_tensor("token_embd.weight")->type, ElementType::Q5_0);  // untied: default type, falls back
    EXPECT_EQ(s.n_fallback, 3);
    for (const TensorReport& r : s.tensors)
        if (r.name == "blk.0.attn_q.weight") { EXPECT_NE(r.note.find("falling back to q5_0"), std::string::npos); }
    // --pure Q8_0: a 40-wide row is not a whole number of 32-blocks and Q8_0 has no fallback.
    EXPECT_THROW(quantize_model(in, temp("odd-q8.gguf"), options_for(FileType::MOSTLY_Q8_0, true)), Error);
}

TEST(QuantizeModel, OverridesAndLeaveOutput) {
    QuantizeOptions o = options_for(FileType::MOSTLY_Q4_K_M);
    o.mix.token_embedding_type = ElementType::Q8_0;
    o.mix.overrides.push_back({"attn_(q|k)\\.weight$", ElementType::Q5_0});
    o.mix.overrides.push_back({"blk\\.7\\.", ElementType::IQ4_NL});
    const std::string out = temp("austen-ovr.gguf");
    quantize_model(kAusten, out, o);
    auto f = gguf::File::open(out);
    EXPECT_EQ(f->find_tensor("token_embd.weight")->type, ElementType::Q8_0);
    EXPECT_EQ(f->find_tensor("blk.2.attn_q.weight")->type, ElementType::Q5_0);
    EXPECT_EQ(f->find_tensor("blk.7.attn_k.weight")->type, ElementType::Q5_0);  // first match wins
    EXPECT_EQ(f->find_tensor("blk.7.ffn_up.weight")->type, ElementType::IQ4_NL);
    EXPECT_EQ(f->find_tensor("blk.2.ffn_up.weight")->type, ElementType::Q4_K);
    o.mix.overrides = {{"(unclosed", ElementType::Q8_0}};
    EXPECT_THROW(quantize_model(kAusten, temp("bad.gguf"), o), Error);
}

TEST(QuantizeModel, ImatrixIsUsedPerTensor) {
    // A made-up importance matrix for one tensor: the result must be the
    // reference quantizer run with exactly those weights (sums / calls).
    auto src = gguf::File::open(kAusten);
    const gguf::TensorInfo& t = *src->find_tensor("blk.1.attn_q.weight");
    std::vector<float> sums(t.ne[0]);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] = 4.0f * (1.0f + static_cast<float>(i % 17));
    const std::string path = temp("one.imatrix");
    save_legacy_imatrix(path, {{t.name, sums}}, 4, "austen.txt", 10);
    const ImportanceMatrix im = load_imatrix(path);
    QuantizeOptions o = options_for(FileType::MOSTLY_Q4_K_S, true);
    o.imatrix = &im;
    o.imatrix_file = path;
    const std::string out = temp("austen-im.gguf");
    quantize_model(kAusten, out, o);
    auto q = gguf::File::open(out);
    EXPECT_EQ(q->get_string("quantize.imatrix.file"), path);
    EXPECT_EQ(q->get_string("quantize.imatrix.dataset"), "austen.txt");
    EXPECT_EQ(q->get_u32("quantize.imatrix.entries_count"), 1u);
    EXPECT_EQ(q->get_u32("quantize.imatrix.chunks_count"), 10u);
    const auto values = as_floats(*src, t);
    std::vector<float> weights(sums.size());
    for (size_t i = 0; i < sums.size(); ++i) weights[i] = sums[i] / 4.0f;
    const auto got = q->tensor_data(*q->find_tensor(t.name));
    std::vector<uint8_t> with(got.size()), without(got.size());
    quant::quantize_rows(ElementType::Q4_K, values.data(), with.data(), t.ne[1], t.ne[0], weights.data());
    quant::quantize_rows(ElementType::Q4_K, values.data(), without.data(), t.ne[1], t.ne[0]);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), with.begin(), with.end()));
    EXPECT_FALSE(std::equal(got.begin(), got.end(), without.begin(), without.end()));

    // An entry of the wrong width is an error, not silently ignored.
    save_legacy_imatrix(path, {{t.name, std::vector<float>(100, 1.0f)}}, 1, "x", 1);
    const ImportanceMatrix wrong = load_imatrix(path);
    o.imatrix = &wrong;
    EXPECT_THROW(quantize_model(kAusten, temp("austen-im2.gguf"), o), Error);
}

}  // namespace
}  // namespace cria::quantizer

namespace cria::quantizer {
namespace {

// A multimodal projector (arch "clip"): every 2-D weight gets the one type,
// except the tables llama.cpp never quantizes (position and patch embeddings).
TEST(QuantizeModel, ProjectorFile) {
    gguf::Writer w;
    w.add_metadata("general.architecture", gguf::Value::string("clip"));
    static std::vector<float> data(64 * 64, 0.25f);
    auto add = [&](const std::string& name, std::vector<uint64_t> shape) {
        uint64_t n = 4;
        for (uint64_t d : shape) n *= d;
        w.add_tensor(name, ElementType::F32, shape,
                     [n]() { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), n); });
    };
    add("v.position_embd.weight", {64, 16});
    add("v.patch_embd.weight", {4, 4, 3, 64});
    add("v.blk.0.attn_v.weight", {64, 64});
    add("v.blk.0.ln1.weight", {64});
    add("mm.0.weight", {64, 32});
    const std::string in = temp("mmproj.gguf"), out = temp("mmproj-q8.gguf");
    w.write(in);
    quantize_model(in, out, options_for(FileType::MOSTLY_Q8_0));
    auto f = gguf::File::open(out);
    EXPECT_EQ(f->find_tensor("v.position_embd.weight")->type, ElementType::F32);
    EXPECT_EQ(f->find_tensor("v.patch_embd.weight")->type, ElementType::F32);
    EXPECT_EQ(f->find_tensor("v.blk.0.ln1.weight")->type, ElementType::F32);
    EXPECT_EQ(f->find_tensor("v.blk.0.attn_v.weight")->type, ElementType::Q8_0);
    EXPECT_EQ(f->find_tensor("mm.0.weight")->type, ElementType::Q8_0);
    EXPECT_EQ(f->get_u32("general.file_type"), 7u);
}

}  // namespace
}  // namespace cria::quantizer
