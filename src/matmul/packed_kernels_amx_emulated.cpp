// The AMX kernels run on the C++ emulation of the tile instructions
// (amx_tiles.h) with the scalar block math: the same packing, tile shapes,
// loops and float operations as the hardware kernels, runnable on every
// machine. Tests compare it bit for bit with the VNNI kernels; matmul never
// selects it (it is far slower than any real kernel).

#include "matmul/amx_kernel_select.h"

namespace cria::matmul::detail {

TypeKernel packed_amx_emulated_kernel(ElementType t, Packing p) {
    return amx_kernel_for<EmulatedTiles, ScalarBlockMath>(t, p);
}

}  // namespace cria::matmul::detail
