#pragma once
// Llama checkpoints on the Hub rotate Q and K in "rotate half" order; ggml's
// normal RoPE rotates adjacent pairs. llama.cpp's converter reorders the rows
// of each head: row (i, j) of halves i in {0,1}, j < head_dim/2 becomes row
// (j, i). Used for the weights (convert.cpp) and for a LoRA adapter's B
// matrices, whose rows are the same outputs (lora_convert.cpp).

#include <cstdint>
#include <vector>

namespace cria::convert {

// w: n_rows rows of n_cols (row-major). Throws cria::Error when the rows do
// not split into n_head heads of two halves.
void permute_rows(std::vector<float>& w, uint64_t n_rows, uint64_t n_cols, uint32_t n_head);

}  // namespace cria::convert
