#include "rope_permute.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "cria/core/error.h"

namespace cria::convert {

void permute_rows(std::vector<float>& w, uint64_t n_rows, uint64_t n_cols, uint32_t n_head) {
    if (n_head == 0 || n_rows % (2ull * n_head) != 0)
        throw Error("convert: Q/K rows (" + std::to_string(n_rows) + ") do not split into " + std::to_string(n_head) +
                    " heads of two halves");
    const uint64_t head = n_rows / n_head, half = head / 2;
    std::vector<float> out(w.size());
    for (uint64_t h = 0; h < n_head; ++h)
        for (uint64_t i = 0; i < 2; ++i)
            for (uint64_t j = 0; j < half; ++j) {
                const uint64_t from = h * head + i * half + j, to = h * head + j * 2 + i;
                std::copy_n(w.begin() + static_cast<ptrdiff_t>(from * n_cols), n_cols,
                            out.begin() + static_cast<ptrdiff_t>(to * n_cols));
            }
    w.swap(out);
}

}  // namespace cria::convert
