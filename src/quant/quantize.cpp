// Dispatch from ElementType to the reference codecs, with argument checks.

#include "cria/quant/quantize.h"

#include <cstdint>
#include <string>

#include "cria/core/error.h"
#include "quant/codecs.h"

namespace cria::quant {
namespace {

using namespace detail;

struct Codec {
    ElementType type;
    DequantizeFn dequantize;
    QuantizeFn quantize;    // nullptr: this type can only be read
    bool uses_importance;   // quantize() honours an imatrix
};

constexpr Codec kCodecs[] = {
    {ElementType::F32, dequantize_f32, quantize_f32, false},
    {ElementType::F16, dequantize_f16, quantize_f16, false},
    {ElementType::BF16, dequantize_bf16, quantize_bf16, false},
    {ElementType::Q4_0, dequantize_q4_0, quantize_q4_0, true},
    {ElementType::Q4_1, dequantize_q4_1, quantize_q4_1, true},
    {ElementType::Q5_0, dequantize_q5_0, quantize_q5_0, true},
    {ElementType::Q5_1, dequantize_q5_1, quantize_q5_1, true},
    {ElementType::Q8_0, dequantize_q8_0, quantize_q8_0, false},
    {ElementType::Q8_1, dequantize_q8_1, quantize_q8_1, false},
    {ElementType::Q2_K, dequantize_q2_K, quantize_q2_K, true},
    {ElementType::Q3_K, dequantize_q3_K, quantize_q3_K, true},
    {ElementType::Q4_K, dequantize_q4_K, quantize_q4_K, true},
    {ElementType::Q5_K, dequantize_q5_K, quantize_q5_K, true},
    {ElementType::Q6_K, dequantize_q6_K, quantize_q6_K, true},
    {ElementType::Q8_K, dequantize_q8_K, quantize_q8_K, false},
    {ElementType::IQ4_NL, dequantize_iq4_nl, quantize_iq4_nl, true},
    {ElementType::IQ4_XS, dequantize_iq4_xs, quantize_iq4_xs, true},
    {ElementType::MXFP4, dequantize_mxfp4, quantize_mxfp4, false},
};

const Codec* find_codec(ElementType t) {
    for (const Codec& c : kCodecs) {
        if (c.type == t) return &c;
    }
    return nullptr;
}

std::string type_label(ElementType t) {
    const ElementTypeInfo* info = element_type_info(t);
    if (info) return std::string(info->name);
    return "unknown type id " + std::to_string(static_cast<uint32_t>(t));
}

// Checks `n` against the block size of `t`; returns the codec or throws.
const Codec& checked_codec(ElementType t, int64_t n, const char* what, bool need_quantize) {
    const Codec* codec = find_codec(t);
    if (!codec || (need_quantize && !codec->quantize)) {
        throw Error(std::string(what) + ": element type " + type_label(t) + " is not supported");
    }
    const uint32_t block = element_type_info(t)->block_size;
    if (n < 0 || n % block != 0) {
        throw Error(std::string(what) + ": " + std::to_string(n) + " values of type " + type_label(t) +
                    " is not a whole number of blocks of " + std::to_string(block));
    }
    return *codec;
}

}  // namespace

bool can_dequantize(ElementType t) { return find_codec(t) != nullptr; }

bool can_quantize(ElementType t) {
    const Codec* c = find_codec(t);
    return c && c->quantize;
}

bool uses_importance(ElementType t) {
    const Codec* c = find_codec(t);
    return c && c->uses_importance;
}

void dequantize_row(ElementType t, const void* src, float* dst, int64_t n) {
    const Codec& codec = checked_codec(t, n, "dequantize", false);
    if (n == 0) return;
    codec.dequantize(src, dst, n);
}

void quantize_row(ElementType t, const float* src, void* dst, int64_t n, const float* importance) {
    const Codec& codec = checked_codec(t, n, "quantize", true);
    if (n == 0) return;
    codec.quantize(src, dst, n, importance);
}

size_t quantize_rows(ElementType t, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                     const float* importance) {
    const Codec& codec = checked_codec(t, n_per_row, "quantize", true);
    if (n_rows < 0) throw Error("quantize: negative row count " + std::to_string(n_rows));
    const auto row_bytes = row_size_bytes(t, static_cast<uint64_t>(n_per_row));
    if (!row_bytes) throw Error("quantize: row of " + std::to_string(n_per_row) + " values is too large");
    if (*row_bytes != 0 && static_cast<uint64_t>(n_rows) > SIZE_MAX / *row_bytes) {
        throw Error("quantize: " + std::to_string(n_rows) + " rows of " + std::to_string(n_per_row) + " values are too large");
    }
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < n_rows && n_per_row > 0; ++r) {
        codec.quantize(src + r * n_per_row, out + static_cast<size_t>(r) * *row_bytes, n_per_row, importance);
    }
    return static_cast<size_t>(n_rows) * *row_bytes;
}

}  // namespace cria::quant
