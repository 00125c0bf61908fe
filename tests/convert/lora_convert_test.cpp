// `cria convert --lora`: a PEFT adapter written here (adapter_config.json and
// adapter_model.safetensors with F32, F16 and BF16 tensors) is converted
// against a synthetic llama base; the base with the converted adapter gives
// the logits of the merged model (W + s·B·A written as a plain model, with
// the query rows in ggml's RoPE order as the base's), and hostile adapter
// directories are refused with clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint_writer.h"
#include "cria/convert/lora_convert.h"
#include "cria/core/error.h"
#include "cria/core/float16.h"
#include "cria/gguf/file.h"
#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "support/lora_files.h"
#include "support/test_paths.h"

namespace cria::convert {
namespace {

namespace tc = test_checkpoint;
using json = nlohmann::json;

constexpr uint64_t kRank = 4;
constexpr float kAlpha = 8.0f;  // scale alpha / r = 2

// Logits of every position of a fixed prompt (one prefill).
std::vector<float> logits(const model::Model& m, const model::LoraSet* lora = nullptr) {
    const std::vector<runtime::TokenId> tokens = {1, 17, 250, 3, 99, 311, 8, 42};
    runtime::ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    runtime::Context ctx(m, cp);
    if (lora) ctx.set_lora(*lora);
    runtime::Batch b;
    for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), {0}, true);
    EXPECT_EQ(ctx.decode(b), 0);
    std::vector<float> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto row = ctx.logits(static_cast<int32_t>(i));
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

double max_abs_diff(const std::vector<float>& x, const std::vector<float>& y) {
    EXPECT_EQ(x.size(), y.size());
    double m = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
    return m;
}

// A tensor stored as F16 or BF16, and the values it holds after rounding.
tc::Tensor half_tensor(const tc::Tensor& f32, const std::string& dtype, std::vector<float>* rounded) {
    const std::vector<float> v = f32.floats();
    tc::Tensor t{f32.name, f32.shape, dtype, std::vector<uint8_t>(v.size() * 2)};
    rounded->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t h = dtype == "F16" ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
        std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        (*rounded)[i] = dtype == "F16" ? f16_to_f32(h) : bf16_to_f32(h);
    }
    return t;
}

// ggml's RoPE row order, written out here on its own (the converter's is rope_permute.cpp).
std::vector<float> rope_rows(const std::vector<float>& rows, uint64_t n_rows, uint64_t n_cols, uint64_t n_head) {
    std::vector<float> out(rows.size());
    const uint64_t head = n_rows / n_head, half = head / 2;
    for (uint64_t r = 0; r < n_rows; ++r) {
        const uint64_t h = r / head, within = r % head, i = within / half, j = within % half;
        std::copy_n(rows.begin() + static_cast<ptrdiff_t>(r * n_cols), n_cols,
                    out.begin() + static_cast<ptrdiff_t>((h * head + 2 * j + i) * n_cols));
    }
    return out;
}

class LoraConvert : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = cria::test::temp_dir() / "lora-convert";
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
        base_path_ = (dir_ / "base.gguf").string();
        model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("llama");
        spec.weight_type = ElementType::F32;
        model::write_synthetic_model(spec, base_path_);
        base_file_ = gguf::File::open(base_path_);
        n_head_ = base_file_->get_u32("llama.attention.head_count", 0);
        // PEFT's tensors (PyTorch order: A [r, in], B [out, r]) and the same
        // pairs in the adapter's GGUF layout, for the merged model.
        uint32_t seed = 100;
        for (const auto& [hf, gguf, a_dtype, b_dtype] :
             std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
                 {"layers.0.self_attn.q_proj", "blk.0.attn_q.weight", "BF16", "F32"},
                 {"layers.1.self_attn.v_proj", "blk.1.attn_v.weight", "F32", "F32"},
                 {"layers.1.mlp.down_proj", "blk.1.ffn_down.weight", "F32", "F16"}}) {
            const gguf::TensorInfo* w = base_file_->find_tensor(gguf);
            ASSERT_NE(w, nullptr) << gguf;
            const uint64_t n_in = w->ne[0], n_out = w->ne[1];
            const std::string prefix = "base_model.model.model." + hf;
            tc::Tensor a = tc::random_f32(prefix + ".lora_A.weight", {kRank, n_in}, seed++, 0.3f);
            tc::Tensor b = tc::random_f32(prefix + ".lora_B.weight", {n_out, kRank}, seed++, 0.3f);
            cria::test::AdapterTensor t{gguf, static_cast<int64_t>(n_in), static_cast<int64_t>(n_out),
                                        static_cast<int64_t>(kRank), a.floats(), b.floats()};
            if (a_dtype != "F32") a = half_tensor(a, a_dtype, &t.a);
            if (b_dtype != "F32") b = half_tensor(b, b_dtype, &t.b);
            if (gguf == "blk.0.attn_q.weight") t.b = rope_rows(t.b, n_out, kRank, n_head_);
            peft_.push_back(std::move(a));
            peft_.push_back(std::move(b));
            merged_.tensors.push_back(std::move(t));
        }
        merged_.alpha = kAlpha;
    }

    // A PEFT adapter directory: the config (changed by `edit`) and the tensors.
    std::filesystem::path write_peft(const std::string& name, const std::function<void(json&)>& edit = {},
                                     const std::vector<tc::Tensor>* tensors = nullptr) const {
        const auto d = dir_ / name;
        std::filesystem::create_directories(d);
        json config = {{"peft_type", "LORA"},
                       {"r", kRank},
                       {"lora_alpha", kAlpha},
                       {"target_modules", {"q_proj", "v_proj", "down_proj"}},
                       {"base_model_name_or_path", "tiny-llama"}};
        if (edit) edit(config);
        std::ofstream(d / "adapter_config.json") << config.dump(2);
        tc::write_safetensors(d / "adapter_model.safetensors", tensors ? *tensors : peft_);
        return d;
    }

    std::string convert(const std::filesystem::path& peft, ElementType outtype = ElementType::F32) const {
        const std::string out = (dir_ / (peft.filename().string() + ".gguf")).string();
        convert_lora(peft, base_path_, out, {.outtype = outtype});
        return out;
    }

    std::filesystem::path dir_;
    std::string base_path_;
    std::unique_ptr<gguf::File> base_file_;
    uint32_t n_head_ = 0;
    std::vector<tc::Tensor> peft_;
    cria::test::AdapterSpec merged_;
};

TEST_F(LoraConvert, ConvertedAdapterGivesTheMergedModelsLogits) {
    const std::string adapter_path = convert(write_peft("peft"));
    const auto f = gguf::File::open(adapter_path);
    EXPECT_EQ(f->get_string("general.type", ""), "adapter");
    EXPECT_EQ(f->get_string("adapter.type", ""), "lora");
    EXPECT_EQ(f->get_string("general.architecture", ""), "llama");
    EXPECT_FLOAT_EQ(f->get_f32("adapter.lora.alpha", 0.0f), kAlpha);
    const gguf::TensorInfo* a = f->find_tensor("blk.1.ffn_down.weight.lora_a");
    const gguf::TensorInfo* b = f->find_tensor("blk.1.ffn_down.weight.lora_b");
    const gguf::TensorInfo* w = base_file_->find_tensor("blk.1.ffn_down.weight");
    ASSERT_TRUE(a && b && w);
    EXPECT_EQ(a->ne[0], w->ne[0]);
    EXPECT_EQ(a->ne[1], kRank);
    EXPECT_EQ(b->ne[0], kRank);
    EXPECT_EQ(b->ne[1], w->ne[1]);
    EXPECT_EQ(f->tensors().size(), 6u);

    const std::string merged_path = (dir_ / "merged.gguf").string();
    for (float scale : {1.0f, 0.6f}) {
        SCOPED_TRACE(scale);
        cria::test::write_merged(*base_file_, {{&merged_, scale}}, merged_path);
        auto merged = model::Model::load(merged_path);
        const std::vector<float> expected = logits(*merged);
        auto base = model::Model::load(base_path_);
        auto adapter = model::LoraAdapter::load(adapter_path, *base);
        model::LoraSet set;
        set.add(*adapter, scale);
        const double base_diff = max_abs_diff(logits(*base), expected);
        EXPECT_GT(base_diff, 0.05);  // the adapter changes the output visibly
        EXPECT_LT(max_abs_diff(logits(*base, &set), expected), 1e-4 * std::max(1.0, base_diff))
            << "base differs by " << base_diff;
    }
}

TEST_F(LoraConvert, HalfPrecisionOutputsLoadAndStayClose) {
    const auto peft = write_peft("peft-half");
    auto base = model::Model::load(base_path_);
    const std::vector<float> exact = [&] {
        auto adapter = model::LoraAdapter::load(convert(peft), *base);
        model::LoraSet set;
        set.add(*adapter, 1.0f);
        return logits(*base, &set);
    }();
    for (ElementType t : {ElementType::F16, ElementType::BF16}) {
        const std::string out = (dir_ / ("half-" + std::string(element_type_name(t)) + ".gguf")).string();
        convert_lora(peft, base_path_, out, {.outtype = t});
        auto adapter = model::LoraAdapter::load(out, *base);
        EXPECT_EQ(gguf::File::open(out)->find_tensor("blk.0.attn_q.weight.lora_a")->type, t);
        model::LoraSet set;
        set.add(*adapter, 1.0f);
        EXPECT_LT(max_abs_diff(logits(*base, &set), exact), 0.1);
    }
}

// Converting must fail with a message naming the cause.
void expect_refused(const std::function<void()>& f, const std::string& needle) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST_F(LoraConvert, HostileAdaptersAreRefused) {
    const std::string out = (dir_ / "refused.gguf").string();
    // No config at all.
    const auto empty = dir_ / "empty";
    std::filesystem::create_directories(empty);
    expect_refused([&] { convert_lora(empty, base_path_, out, {}); }, "adapter_config.json");
    // A rank that does not match the tensors.
    expect_refused([&] { convert(write_peft("rank", [](json& c) { c["r"] = 8; })); }, "rank");
    expect_refused([&] { convert(write_peft("no-r", [](json& c) { c.erase("r"); })); }, "'r'");
    // An unknown target module, and a tensor of one.
    expect_refused([&] { convert(write_peft("target", [](json& c) { c["target_modules"] = {"q_proj", "conv1"}; })); },
                   "conv1");
    std::vector<tc::Tensor> odd = peft_;
    odd.push_back(tc::random_f32("base_model.model.model.layers.0.mlp.conv1.lora_A.weight", {kRank, 8}, 1));
    expect_refused([&] { convert(write_peft("odd-module", {}, &odd)); }, "conv1");
    // Other PEFT kinds.
    expect_refused([&] { convert(write_peft("dora", [](json& c) { c["use_dora"] = true; })); }, "DoRA");
    expect_refused([&] { convert(write_peft("ia3", [](json& c) { c["peft_type"] = "IA3"; })); }, "LORA");
    expect_refused([&] { convert(write_peft("pattern", [](json& c) { c["rank_pattern"] = {{"q_proj", 8}}; })); },
                   "rank_pattern");
    // A pair missing its B half.
    std::vector<tc::Tensor> half(peft_.begin(), peft_.end() - 1);
    expect_refused([&] { convert(write_peft("half", {}, &half)); }, "lora_B");
    // A layer the base does not have, and a shape that does not fit it.
    std::vector<tc::Tensor> far = peft_;
    far[0].name = "base_model.model.model.layers.99.self_attn.q_proj.lora_A.weight";
    far[1].name = "base_model.model.model.layers.99.self_attn.q_proj.lora_B.weight";
    expect_refused([&] { convert(write_peft("far", {}, &far)); }, "not a tensor of the base");
    std::vector<tc::Tensor> wide = peft_;
    wide[0] = tc::random_f32(wide[0].name, {kRank, wide[0].shape[1] + 2}, 5);
    expect_refused([&] { convert(write_peft("wide", {}, &wide)); }, "base matrix");
    // No safetensors file (a pickle only).
    const auto bin = dir_ / "bin";
    std::filesystem::create_directories(bin);
    std::ofstream(bin / "adapter_config.json") << R"({"r": 4, "lora_alpha": 8})";
    std::ofstream(bin / "adapter_model.bin") << "pickle";
    expect_refused([&] { convert_lora(bin, base_path_, out, {}); }, "adapter_model.bin");
    // The base is an adapter.
    const std::string adapter_path = convert(write_peft("ok"));
    expect_refused([&] { convert_lora(dir_ / "ok", adapter_path, out, {}); }, "not an adapter");
}

}  // namespace
}  // namespace cria::convert
