#pragma once
// What a saved sequence records of the images in it (Context::save_sequence).

#include <cstdint>

namespace cria::runtime {

// A run of a saved sequence's tokens that stands for embeddings (an image):
// tokens[first, first + n_tokens) are the caller's placeholders, the run
// occupies positions [pos, pos + n_positions), and `hash` names its content.
struct SavedMedia {
    uint32_t first = 0;
    uint32_t n_tokens = 0;
    int32_t pos = 0;
    uint32_t n_positions = 0;
    uint64_t hash = 0;
};

}  // namespace cria::runtime
