#pragma once
// The logits of a token sequence, computed the way llama.cpp's architecture
// fixtures were (../shared/testdata/arch-fixtures/README.md): sequence 0 from
// position 0 in a fresh context, the first `prefill` tokens in one decode()
// with logits for every position, then every remaining token decoded alone
// at the next position. Used by `cria logits` and by the fixture tests, so
// both check exactly the same path.

#include <cstdint>
#include <span>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/runtime/batch.h"

namespace cria::runtime {

struct LogitsParams {
    size_t prefill = 0;      // tokens in the first decode call; 0 or more than the tokens: all of them
    uint32_t n_ctx = 0;      // 0: the model's training context (what llama.cpp's fixtures used)
    int n_threads = 0;       // <= 0: all hardware threads
    // The reference ran with an F32 cache; F16 (llama.cpp's default) lands ~1e-6 away.
    ElementType type_k = ElementType::F32;
    ElementType type_v = ElementType::F32;
    const model::LoraSet* lora = nullptr;  // adapters applied (null: none); must outlive the call
};

// One row of n_vocab logits per token. Throws cria::Error for an empty token
// list, a token outside the vocabulary, or more tokens than the context holds.
std::vector<std::vector<float>> sequence_logits(const model::Model& model, std::span<const TokenId> tokens,
                                                const LogitsParams& params);

// Normalised mean squared error sum((ref - got)^2) / sum(ref^2) over every
// row and column (llama.cpp's criterion between backends). Throws when the
// shapes differ.
double nmse(const std::vector<std::vector<float>>& ref, const std::vector<std::vector<float>>& got);

}  // namespace cria::runtime
