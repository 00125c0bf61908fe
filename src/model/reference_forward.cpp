// The entry point of the float64 reference forward: the weights are loaded
// through the architecture's own tensor table (the same tensors, optional
// parts and ScaleUse rules as the fast path, but never packed), then the
// family's reference function (reference/<family>.cpp) registered in its
// definition computes the logits.

#include "cria/model/reference_forward.h"

#include "cria/gguf/file.h"
#include "cria/model/hparams.h"
#include "cria/model/model.h"
#include "model/arch.h"
#include "model/reference/helpers.h"
#include "model/tensor_table.h"

namespace cria::model {

std::vector<std::vector<float>> reference_forward(const gguf::File& file, std::span<const int32_t> tokens,
                                                  uint32_t n_ctx) {
    const HParams hp = read_hparams(file);  // throws for an unregistered architecture
    const ArchDefinition* arch = find_architecture(hp.arch_name);
    Weights w;
    w.layers.resize(hp.n_layer);
    TensorTable table;
    arch->declare_tensors(hp, table, w);
    load_tensors(file, table, hp.arch_name);
    const reference::Input in{hp, w, tokens, long_rope_for_context(hp, n_ctx ? n_ctx : hp.n_ctx_train)};
    return arch->reference_forward(in);
}

}  // namespace cria::model
