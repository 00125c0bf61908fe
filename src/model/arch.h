#pragma once
// One registered definition per architecture. Each file in archs/ owns
// everything about its family: the name in general.architecture, the
// hyperparameters it reads beyond the common ones (hparams_keys.h), its tensor
// table (tensor_table.h), its forward pass, built from the shared blocks
// (blocks.h), and its float64 reference forward (one function per family in
// reference/, built from reference/helpers.h). archs/registry.cpp lists them;
// nothing else names an architecture. See docs/ARCHITECTURE.md, "Adding an architecture".

#include <string_view>
#include <vector>

#include "cria/model/hparams.h"
#include "cria/model/model.h"

namespace cria::model {

class HParamsKeys;
class TensorTable;
namespace blocks {
struct Step;
}
namespace reference {
struct Input;
}

struct ArchDefinition {
    std::string_view name;  // general.architecture
    // Reads the keys of this architecture into hp; the common ones (widths,
    // heads, context, rope base and scaling) are read before, with llama.cpp's
    // defaults. Throws cria::Error (keys.fail) for a value it cannot run.
    void (*read_hparams)(const HParamsKeys& keys, HParams& hp);
    // Declares every tensor of the architecture into `table`, pointing at
    // the fields of `w` they go to (w.layers is already sized).
    void (*declare_tensors)(const HParams& hp, TensorTable& table, Weights& w);
    // The forward pass of one micro-batch. logits / hidden are null when not wanted.
    void (*forward)(blocks::Step& s, float* logits, float* hidden);
    // The float64 reference forward of the family (reference/families.h):
    // the logits of every position, from the weights `declare_tensors` loads
    // (unpacked). The oracle the fast path is tested against.
    std::vector<std::vector<float>> (*reference_forward)(const reference::Input& in);
    // Whether files with experts (expert_count > 0) are accepted: then
    // read_hparams sets the expert width and routing (HParams::n_ff_exp...)
    // and the tensor table declares the expert tensors.
    bool supports_experts = false;
    // Whether the family has recurrent layers (mamba and the hybrids): then
    // head counts and the feed-forward width may be 0 (a pure state-space
    // model) or per-layer arrays whose zero entries mark the layers without
    // attention or feed-forward block (the non-zero entries must agree), and
    // read_hparams sets HParams::recurrent_layers and the state sizes.
    bool has_recurrent_layers = false;
};

// The definition registered under `name`, or null.
const ArchDefinition* find_architecture(std::string_view name);
// Every registered name, in registration order.
std::vector<std::string_view> architecture_names();

}  // namespace cria::model
