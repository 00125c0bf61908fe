#pragma once
// A model file's fingerprint: what says that two opened files hold the same
// weights, cheaply enough to compute on every slot save and restore.
//
// It hashes the tensor table (names, types, shapes, offsets) and a sample of
// every tensor's bytes: up to 4 KiB at its start, its middle and its end.
// Two files that differ in any tensor's layout, or in weights that a
// fine-tune or another quantization changes (everywhere, so in the samples
// too), get different fingerprints; a full hash would read gigabytes for
// each save. Metadata that does not change what a forward pass computes
// (names, chat template) is left out on purpose, so a renamed or re-tagged
// copy of a model keeps its fingerprint.

#include <cstdint>
#include <string>

namespace cria::gguf {

class File;

uint64_t content_fingerprint(const File& file);

// The file's name without its directory (what messages name a model by).
std::string file_base_name(const File& file);

}  // namespace cria::gguf
