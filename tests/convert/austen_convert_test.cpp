// The done-criterion of cria convert: the bundled Hugging Face checkpoints of
// austen-7m and austen-1m convert to GGUFs whose tensors equal the reference
// GGUFs (made with llama.cpp's converter) bit for bit, whose metadata is the
// same up to the keys listed below, and which give the same greedy text.

#include <gtest/gtest.h>

#include <set>

#include "cria/convert/convert.h"
#include "cria/gguf/file.h"
#include "cria/model/reference_forward.h"
#include "support/test_paths.h"

namespace cria::convert {
namespace {

struct Case {
    std::string model;
    ElementType outtype;
    std::string reference;
};

// Keys that differ on purpose:
//  - general.description: free text from the model card, which the checkpoint
//    does not carry;
//  - general.size_label: llama.cpp's current converter writes two significant
//    digits ("7.3M"); the reference files were made with an older one ("7M").
const std::set<std::string> kExpectedDifferences = {"general.description", "general.size_label"};

void compare(const Case& c) {
    const std::string out = (test::temp_dir() / (c.model + "-" + std::string(element_type_name(c.outtype)) + ".gguf")).string();
    const ConvertSummary s = convert(test::model_path(c.model + "/hf"), out, {c.outtype, ""});
    EXPECT_EQ(s.hf_architecture, "LlamaForCausalLM");
    auto got = gguf::File::open(out);
    auto want = gguf::File::open(test::model_path(c.model + "/" + c.reference).string());

    // Tensors: same names, order, types, shapes and bytes.
    ASSERT_EQ(got->tensors().size(), want->tensors().size());
    for (size_t i = 0; i < want->tensors().size(); ++i) {
        const auto& a = got->tensors()[i];
        const auto& b = want->tensors()[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.type, b.type) << b.name;
        EXPECT_EQ(a.ne, b.ne) << b.name;
        const auto x = got->tensor_data(a), y = want->tensor_data(b);
        EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << b.name << " differs";
    }
    // Metadata: every key of the reference in the same order with the same value.
    std::vector<std::string> got_keys, want_keys;
    for (const auto& [k, v] : got->metadata())
        if (!kExpectedDifferences.count(k)) got_keys.push_back(k);
    for (const auto& [k, v] : want->metadata()) {
        if (kExpectedDifferences.count(k)) continue;
        want_keys.push_back(k);
        const gguf::Value* g = got->find(k);
        ASSERT_NE(g, nullptr) << k << " missing";
        EXPECT_TRUE(*g == v) << k << ": " << g->to_display_string() << " vs " << v.to_display_string();
    }
    EXPECT_EQ(got_keys, want_keys);
    EXPECT_EQ(got->get_string("general.size_label"), c.model == "austen-7m" ? "7.3M" : "918K");

    // Greedy continuation with the oracle forward pass: same tokens.
    std::vector<int32_t> a = {72, 101, 332}, b = a;
    for (int step = 0; step < 3; ++step) {
        const auto la = model::reference_forward(*got, a).back();
        const auto lb = model::reference_forward(*want, b).back();
        EXPECT_EQ(la, lb);
        a.push_back(static_cast<int32_t>(std::max_element(la.begin(), la.end()) - la.begin()));
        b.push_back(static_cast<int32_t>(std::max_element(lb.begin(), lb.end()) - lb.begin()));
    }
    EXPECT_EQ(a, b);
}

TEST(ConvertAusten, Austen7mF32) { compare({"austen-7m", ElementType::F32, "austen-7m-f32.gguf"}); }
TEST(ConvertAusten, Austen7mF16) { compare({"austen-7m", ElementType::F16, "austen-7m-f16.gguf"}); }
TEST(ConvertAusten, Austen1mF32) { compare({"austen-1m", ElementType::F32, "austen-1m-f32.gguf"}); }
TEST(ConvertAusten, Austen1mF16) { compare({"austen-1m", ElementType::F16, "austen-1m-f16.gguf"}); }

}  // namespace
}  // namespace cria::convert
