#include "mxfp4_repack.h"

#include <string>

#include "cria/core/error.h"

namespace cria::convert {

void repack_mxfp4_block(const uint8_t* packed, uint8_t scale, uint8_t* ggml_block) {
    uint8_t values[kMxfp4BlockValues];
    for (uint64_t k = 0; k < kMxfp4PackedBytes; ++k) {
        values[2 * k] = packed[k] & 0x0F;
        values[2 * k + 1] = packed[k] >> 4;
    }
    ggml_block[0] = scale;
    for (uint64_t j = 0; j < kMxfp4PackedBytes; ++j)
        ggml_block[1 + j] = static_cast<uint8_t>(values[j] | (values[j + kMxfp4PackedBytes] << 4));
}

std::vector<uint8_t> repack_mxfp4_rows(std::span<const uint8_t> blocks, std::span<const uint8_t> scales,
                                       uint64_t n_matrices, uint64_t n_rows, uint64_t n_blocks, uint64_t first_row,
                                       uint64_t row_step) {
    if (row_step == 0 || first_row >= row_step || n_rows % row_step != 0)
        throw Error("convert: MXFP4 rows " + std::to_string(n_rows) + " do not split into " + std::to_string(row_step) +
                    " interleaved parts");
    const uint64_t n_blocks_total = n_matrices * n_rows * n_blocks;
    if (blocks.size() != n_blocks_total * kMxfp4PackedBytes || scales.size() != n_blocks_total)
        throw Error("convert: MXFP4 blocks (" + std::to_string(blocks.size()) + " bytes) and scales (" +
                    std::to_string(scales.size()) + " bytes) do not fit " + std::to_string(n_matrices) + " x " +
                    std::to_string(n_rows) + " rows of " + std::to_string(n_blocks) + " blocks");
    const uint64_t rows_out = n_rows / row_step;
    std::vector<uint8_t> out(n_matrices * rows_out * n_blocks * kMxfp4GgmlBytes);
    uint8_t* dst = out.data();
    for (uint64_t m = 0; m < n_matrices; ++m)
        for (uint64_t r = first_row; r < n_rows; r += row_step) {
            const uint64_t first_block = (m * n_rows + r) * n_blocks;
            for (uint64_t b = 0; b < n_blocks; ++b, dst += kMxfp4GgmlBytes)
                repack_mxfp4_block(blocks.data() + (first_block + b) * kMxfp4PackedBytes, scales[first_block + b], dst);
        }
    return out;
}

}  // namespace cria::convert
