#pragma once
// Reading a drafter head's GGUF (eagle3, dflash) with checks: every problem
// is a cria::Error "<path>: <arch> draft: <what>", never a crash.

#include <cstdint>
#include <string>
#include <vector>

#include "cria/gguf/file.h"
#include "cria/ops/tensor.h"

namespace cria::spec {

[[noreturn]] void head_file_error(const gguf::File& f, const std::string& arch, const std::string& what);
std::string head_shape_text(const gguf::TensorInfo& t);
// A matrix of exactly {ne0, ne1} (ne1 = 1: a vector) viewed in the file; an
// empty view when absent and not required.
ops::TensorView head_matrix(const gguf::File& f, const std::string& arch, const std::string& name, uint64_t ne0,
                            uint64_t ne1, bool required = true);
// A vector of n values as F32; empty when absent and not required.
std::vector<float> head_vector(const gguf::File& f, const std::string& arch, const std::string& name, uint64_t n,
                               bool required = true);
uint32_t head_u32(const gguf::File& f, const std::string& arch, const std::string& key);

}  // namespace cria::spec
