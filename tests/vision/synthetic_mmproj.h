#pragma once
// A small gemma3-layout mmproj with random weights, described as keys and
// tensor shapes so a test can break exactly one thing before writing it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cria/gguf/value.h"

namespace cria::test {

struct MmprojSpec {
    std::vector<std::pair<std::string, gguf::Value>> keys;
    std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors;  // ggml order
    // Write 2-D and 4-D weights (not the tables) as F16, as real mmproj files do.
    bool f16_matrices = false;

    // Replaces (or adds) a key; erase_key / erase_tensor drop one.
    void set_key(const std::string& key, gguf::Value value);
    void erase_key(const std::string& key);
    void set_shape(const std::string& tensor, std::vector<uint64_t> shape);
    void erase_tensor(const std::string& tensor);
};

// Width 8, 2 heads, FFN 12, 1 block, patch 2, image 8x8 (16 patches, 1
// output token after the 4x4 pool), output width 6.
MmprojSpec small_gemma3_mmproj();
// The same encoder size for the other families (block count 2; mlp stores
// 3 and runs 2; muse-glimmer's position table is 2x2, so a 6x4 patch grid
// has 6 windows and its first block is windowed).
MmprojSpec small_mlp_mmproj();
MmprojSpec small_qwen2vl_mmproj();
MmprojSpec small_muse_glimmer_mmproj();
// Writes the file (weights ~ N(0, 0.3), seeded) and returns its path.
std::string write_mmproj(const MmprojSpec& spec, const std::string& name);

}  // namespace cria::test
