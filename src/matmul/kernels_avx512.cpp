#include "matmul/kernels.h"

namespace cria::matmul::detail {

TypeKernel avx512_kernel(ElementType) { return {}; }

}  // namespace cria::matmul::detail
