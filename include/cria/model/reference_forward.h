#pragma once
// The reference forward pass: the whole transformer written for clarity, as
// an oracle for tests of the fast path. Plain loops, float64 accumulation,
// no KV cache (every call recomputes the whole sequence), no threads, no SIMD.
// Too slow for anything but small models and short sequences. One function
// per family (src/model/reference/), chosen through the architecture's
// registered definition; the weights are read through the architecture's
// tensor table, as the fast path reads them.

#include <cstdint>
#include <span>
#include <vector>

namespace cria::gguf {
class File;
}

namespace cria::model {

// Logits for every position of `tokens` (positions 0..n-1, one sequence):
// result[i] holds n_vocab values predicting the token after tokens[i].
// n_ctx is the context the fast path would run with (0: the model's training
// context, llama.cpp's default): it picks phi3's long rope factors as
// Model::long_rope_for_context does.
// Throws cria::Error for an unsupported model or an out-of-range token id.
std::vector<std::vector<float>> reference_forward(const gguf::File& file, std::span<const int32_t> tokens,
                                                  uint32_t n_ctx = 0);

}  // namespace cria::model
