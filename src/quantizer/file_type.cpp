#include "cria/quantizer/file_type.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace cria::quantizer {

const std::vector<FileTypeInfo>& file_types() {
    using E = ElementType;
    using F = FileType;
    // Sizes in the descriptions are llama-quantize's own figures for Llama-3-8B.
    static const std::vector<FileTypeInfo> table = {
        {F::MOSTLY_Q4_0, "Q4_0", E::Q4_0, "4.34G, +0.4685 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q4_1, "Q4_1", E::Q4_1, "4.78G, +0.4511 ppl @ Llama-3-8B"},
        {F::MOSTLY_MXFP4_MOE, "MXFP4_MOE", E::MXFP4, "MXFP4 for expert tensors, Q8_0 for the rest"},
        {F::MOSTLY_Q5_0, "Q5_0", E::Q5_0, "5.21G, +0.1316 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q5_1, "Q5_1", E::Q5_1, "5.65G, +0.1062 ppl @ Llama-3-8B"},
        {F::MOSTLY_IQ4_NL, "IQ4_NL", E::IQ4_NL, "4.50 bpw non-linear quantization"},
        {F::MOSTLY_IQ4_XS, "IQ4_XS", E::IQ4_XS, "4.25 bpw non-linear quantization"},
        {F::MOSTLY_Q2_K, "Q2_K", E::Q2_K, "2.96G, +3.5199 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q2_K_S, "Q2_K_S", E::Q2_K, "2.96G, +3.1836 ppl @ Llama-3-8B (needs an imatrix)"},
        {F::MOSTLY_Q3_K_S, "Q3_K_S", E::Q3_K, "3.41G, +1.6321 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q3_K_M, "Q3_K_M", E::Q3_K, "3.74G, +0.6569 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q3_K_L, "Q3_K_L", E::Q3_K, "4.03G, +0.5562 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q4_K_S, "Q4_K_S", E::Q4_K, "4.37G, +0.2689 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q4_K_M, "Q4_K_M", E::Q4_K, "4.58G, +0.1754 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q5_K_S, "Q5_K_S", E::Q5_K, "5.21G, +0.1049 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q5_K_M, "Q5_K_M", E::Q5_K, "5.33G, +0.0569 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q6_K, "Q6_K", E::Q6_K, "6.14G, +0.0217 ppl @ Llama-3-8B"},
        {F::MOSTLY_Q8_0, "Q8_0", E::Q8_0, "7.96G, +0.0026 ppl @ Llama-3-8B"},
        {F::MOSTLY_F16, "F16", E::F16, "14.00G, +0.0020 ppl @ Mistral-7B"},
        {F::MOSTLY_BF16, "BF16", E::BF16, "14.00G, -0.0050 ppl @ Mistral-7B"},
        {F::ALL_F32, "F32", E::F32, "26.00G @ 7B"},
    };
    return table;
}

namespace {
bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
           });
}
}  // namespace

std::optional<FileTypeInfo> file_type_from_name(std::string_view name) {
    uint32_t number = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), number);
    const bool numeric = ec == std::errc() && end == name.data() + name.size();
    for (const FileTypeInfo& info : file_types()) {
        if (numeric ? static_cast<uint32_t>(info.type) == number : iequals(info.name, name)) return info;
    }
    return std::nullopt;
}

const FileTypeInfo* file_type_info(FileType t) {
    for (const FileTypeInfo& info : file_types())
        if (info.type == t) return &info;
    return nullptr;
}

std::string file_type_names() {
    std::string out;
    for (const FileTypeInfo& info : file_types()) out += (out.empty() ? "" : ", ") + std::string(info.name);
    return out;
}

}  // namespace cria::quantizer
