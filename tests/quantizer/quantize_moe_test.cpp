// cria quantize on llama.cpp's own mixture-of-experts files (the F32 arch
// fixtures): every tensor of the result is the reference quantizer's output
// for the type llama.cpp's rules pick, stacked experts included, and each
// expert of a 3-D tensor is quantized with its own slice of the imatrix, as
// llama-quantize does.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/quant/quantize.h"
#include "cria/quantizer/quantize_model.h"
#include "support/test_paths.h"

namespace cria::quantizer {
namespace {

using E = ElementType;

std::string fixture(const std::string& name) {
    const auto dir = test::arch_fixtures_dir();
    return dir.empty() ? std::string() : (dir / name).string();
}

std::vector<float> f32_values(const gguf::File& f, const gguf::TensorInfo& t) {
    const auto bytes = f.tensor_data(t);
    std::vector<float> v(t.n_elements());
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

// The type llama-quantize gives each tensor of these fixtures under MXFP4_MOE:
// stacked experts MXFP4, other weights (output and token embedding included)
// q8_0, and norms, vectors, biases and the router left as they are.
E mxfp4_moe_type(const gguf::TensorInfo& t) {
    const std::string& n = t.name;
    const bool weight = n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
    if (t.n_dims < 2 || !weight || n.find("_norm.weight") != std::string::npos ||
        n.find("ffn_gate_inp.weight") != std::string::npos)
        return t.type;
    return t.ne[2] > 1 ? E::MXFP4 : E::Q8_0;
}

TEST(QuantizeMoe, Mxfp4MoeEqualsReferenceQuantizer) {
    for (const char* name : {"qwen3moe-moe.gguf", "llama-moe.gguf", "gpt-oss-moe.gguf"}) {
        const std::string in = fixture(name);
        if (in.empty()) GTEST_SKIP() << "arch fixtures not found";
        const std::string out = (test::temp_dir() / (std::string("mxfp4-") + name)).string();
        QuantizeOptions o;
        o.mix.file_type = FileType::MOSTLY_MXFP4_MOE;
        o.n_threads = 2;
        quantize_model(in, out, o);
        auto src = gguf::File::open(in);
        auto q = gguf::File::open(out);
        EXPECT_EQ(q->get_u32("general.file_type"), 38u);
        int n_mxfp4 = 0;
        for (const gguf::TensorInfo& s : src->tensors()) {
            const gguf::TensorInfo* t = q->find_tensor(s.name);
            ASSERT_NE(t, nullptr) << s.name;
            const E want = mxfp4_moe_type(s);
            ASSERT_EQ(t->type, want) << name << " " << s.name << ": " << element_type_name(t->type);
            EXPECT_EQ(t->ne, s.ne) << s.name;
            const auto got = q->tensor_data(*t);
            if (want == s.type) {
                const auto same = src->tensor_data(s);
                EXPECT_TRUE(std::equal(got.begin(), got.end(), same.begin(), same.end())) << s.name;
                continue;
            }
            n_mxfp4 += want == E::MXFP4;
            const auto values = f32_values(*src, s);
            std::vector<uint8_t> ref(got.size());
            quant::quantize_rows(want, values.data(), ref.data(), static_cast<int64_t>(s.n_elements() / s.ne[0]),
                                 static_cast<int64_t>(s.ne[0]));
            EXPECT_TRUE(std::equal(got.begin(), got.end(), ref.begin(), ref.end())) << name << " " << s.name;
        }
        EXPECT_EQ(n_mxfp4, 6) << name;  // gate/up/down experts of 2 layers
    }
}

TEST(QuantizeMoe, Q4_K_MOnA64WideMoeFallsBackPerLayer) {
    // 64-wide rows fit no 256-block: every K-quant falls back (q4_K -> q5_0,
    // q6_K -> q8_0), after the mix chose per layer: with 2 layers
    // use_more_bits holds for layer 1 only, so ffn_down_exps and attn_v of
    // layer 1 were q6_K. The output rule gives q8_0 directly.
    const std::string in = fixture("qwen3moe-moe.gguf");
    if (in.empty()) GTEST_SKIP() << "arch fixtures not found";
    const std::string out = (test::temp_dir() / "moe-q4km.gguf").string();
    QuantizeOptions o;
    o.mix.file_type = FileType::MOSTLY_Q4_K_M;
    const QuantizeSummary summary = quantize_model(in, out, o);
    auto src = gguf::File::open(in);
    auto q = gguf::File::open(out);
    const std::map<std::string, E> want = {
        {"output.weight", E::Q8_0},           {"token_embd.weight", E::Q5_0},
        {"blk.0.ffn_down_exps.weight", E::Q5_0}, {"blk.1.ffn_down_exps.weight", E::Q8_0},
        {"blk.0.attn_v.weight", E::Q5_0},     {"blk.1.attn_v.weight", E::Q8_0},
        {"blk.1.ffn_gate_exps.weight", E::Q5_0}, {"blk.1.ffn_up_exps.weight", E::Q5_0},
        {"blk.1.attn_k.weight", E::Q5_0},     {"blk.1.ffn_gate_inp.weight", E::F32}};
    for (const auto& [name, type] : want) {
        const gguf::TensorInfo& t = *q->find_tensor(name);
        EXPECT_EQ(t.type, type) << name << ": " << element_type_name(t.type);
        if (type == E::F32) continue;
        const gguf::TensorInfo& s = *src->find_tensor(name);
        const auto values = f32_values(*src, s);
        const auto got = q->tensor_data(t);
        std::vector<uint8_t> ref(got.size());
        quant::quantize_rows(type, values.data(), ref.data(), static_cast<int64_t>(s.n_elements() / s.ne[0]),
                             static_cast<int64_t>(s.ne[0]));
        EXPECT_TRUE(std::equal(got.begin(), got.end(), ref.begin(), ref.end())) << name;
    }
    EXPECT_GT(summary.n_fallback, 0);
}

TEST(QuantizeMoe, EachExpertUsesItsOwnImatrixSlice) {
    const std::string in = fixture("qwen3moe-moe.gguf");
    if (in.empty()) GTEST_SKIP() << "arch fixtures not found";
    auto src = gguf::File::open(in);
    const gguf::TensorInfo& t = *src->find_tensor("blk.1.ffn_up_exps.weight");
    const uint64_t n_per_row = t.ne[0], rows = t.ne[1], n_expert = t.ne[2];
    ASSERT_GT(n_expert, 1u);
    // Sums over 3 calls, different for every expert.
    std::vector<float> sums(n_per_row * n_expert);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] = 3.0f * (0.5f + static_cast<float>((i * 7919) % 23));
    const std::string path = (test::temp_dir() / "experts.imatrix").string();
    save_legacy_imatrix(path, {{t.name, sums}}, 3, "moe.txt", 4);
    const ImportanceMatrix im = load_imatrix(path);
    QuantizeOptions o;
    o.mix.file_type = FileType::MOSTLY_Q4_0;
    o.mix.pure = true;
    o.imatrix = &im;
    o.n_threads = 3;
    const std::string out = (test::temp_dir() / "moe-q4_0-im.gguf").string();
    quantize_model(in, out, o);
    auto q = gguf::File::open(out);
    const auto got = q->tensor_data(*q->find_tensor(t.name));
    const auto values = f32_values(*src, t);
    const size_t row_bytes = *row_size_bytes(E::Q4_0, n_per_row), expert_bytes = row_bytes * rows;
    ASSERT_EQ(got.size(), expert_bytes * n_expert);
    for (uint64_t e = 0; e < n_expert; ++e) {
        std::vector<float> weights(n_per_row);
        for (uint64_t c = 0; c < n_per_row; ++c) weights[c] = sums[e * n_per_row + c] / 3.0f;
        std::vector<uint8_t> own(expert_bytes), first(expert_bytes);
        quant::quantize_rows(E::Q4_0, values.data() + e * rows * n_per_row, own.data(), rows, n_per_row, weights.data());
        for (uint64_t c = 0; c < n_per_row; ++c) weights[c] = sums[c] / 3.0f;
        quant::quantize_rows(E::Q4_0, values.data() + e * rows * n_per_row, first.data(), rows, n_per_row, weights.data());
        const auto part = got.subspan(e * expert_bytes, expert_bytes);
        EXPECT_TRUE(std::equal(part.begin(), part.end(), own.begin(), own.end())) << "expert " << e;
        if (e > 0) { EXPECT_FALSE(std::equal(part.begin(), part.end(), first.begin(), first.end())) << "expert " << e; }
    }
    // An entry sized for one expert only is refused (llama-quantize's check).
    save_legacy_imatrix(path, {{t.name, std::vector<float>(n_per_row, 1.0f)}}, 1, "x", 1);
    const ImportanceMatrix wrong = load_imatrix(path);
    o.imatrix = &wrong;
    EXPECT_THROW(quantize_model(in, (test::temp_dir() / "moe-bad.gguf").string(), o), Error);
}

}  // namespace
}  // namespace cria::quantizer
