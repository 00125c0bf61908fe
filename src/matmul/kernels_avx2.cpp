#include "matmul/kernels.h"

namespace cria::matmul::detail {

TypeKernel avx2_kernel(ElementType) { return {}; }

}  // namespace cria::matmul::detail
