#pragma once
// Importance matrices ("imatrix") as llama.cpp's llama-imatrix writes them.
//
// Two formats exist and both are read:
//  - the legacy binary .dat: i32 entry count, then per entry i32 name length,
//    name, i32 call count, i32 value count, f32 values (sums of squared
//    activations over all calls); optionally i32 chunk count, i32 length and
//    the dataset file name at the end;
//  - the GGUF format (general.type = "imatrix"): per weight two tensors,
//    "<name>.in_sum2" (f32, [n_per_row, n_matrices]) and "<name>.counts"
//    (f32, [1, n_matrices]).
// Either way the quantizer wants the mean: sum / count per matrix, exactly as
// llama-quantize computes it (1.0 for matrices never seen in GGUF files).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cria::quantizer {

struct ImportanceMatrix {
    std::map<std::string, std::vector<float>> values;  // tensor name -> weights (n_per_row * n_matrices)
    std::vector<std::string> datasets;
    int64_t chunk_count = -1;  // -1 when the file does not say
    bool legacy = false;
};

// Reads either format (detected from the GGUF magic). Throws cria::Error
// naming the file and what is wrong for a truncated, inconsistent or
// non-finite file.
ImportanceMatrix load_imatrix(const std::string& path);

// Writes the legacy format (used by tests to build fixtures; llama-imatrix's
// --output-format dat). `calls` is the per-entry call count (values are sums).
void save_legacy_imatrix(const std::string& path, const std::map<std::string, std::vector<float>>& sums, int32_t calls,
                         const std::string& dataset, int32_t chunk_count);

}  // namespace cria::quantizer
