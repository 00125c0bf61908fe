#pragma once
// OpenAI's MXFP4 checkpoints (gpt-oss) -> ggml's MXFP4 blocks, byte for byte
// as llama.cpp's converter repacks them (GptOssModel.repack_mxfp4).
//
// Both store 32 E2M1 values with one E8M0 scale per block; only the layout
// differs. The checkpoint keeps `*_blocks` [..., rows, n_blocks, 16] (value
// 2k in the low nibble of byte k, value 2k+1 in its high nibble) and `*_scales`
// [..., rows, n_blocks] apart. ggml's block is 17 bytes: the scale, then byte j
// holding value j in its low nibble and value j+16 in its high nibble. The
// scale byte is the same number in both (ggml's table is the E2M1 values
// doubled and its exponent bias one higher).

#include <cstdint>
#include <span>
#include <vector>

namespace cria::convert {

inline constexpr uint64_t kMxfp4BlockValues = 32;
inline constexpr uint64_t kMxfp4PackedBytes = 16;  // per block in the checkpoint
inline constexpr uint64_t kMxfp4GgmlBytes = 17;    // per block in ggml

// One block: 16 checkpoint bytes and their scale -> 17 ggml bytes.
void repack_mxfp4_block(const uint8_t* packed, uint8_t scale, uint8_t* ggml_block);

// The rows first_row, first_row + row_step, ... (n_rows / row_step of them,
// row_step 1 or 2: gpt-oss interleaves gate and up rows) of every matrix of a
// [n_matrices, n_rows, n_blocks, 16] blocks tensor and its scales, as ggml
// MXFP4 rows. Throws cria::Error when the spans do not hold that many bytes.
std::vector<uint8_t> repack_mxfp4_rows(std::span<const uint8_t> blocks, std::span<const uint8_t> scales,
                                       uint64_t n_matrices, uint64_t n_rows, uint64_t n_blocks, uint64_t first_row,
                                       uint64_t row_step);

}  // namespace cria::convert
