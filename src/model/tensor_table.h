#pragma once
// The tensors of an architecture, declared once: each entry names a GGUF
// tensor, its shape, whether the file must have it, and the field of Weights
// it goes to. Everything else follows from the table: the loader reads and
// checks every entry (and refuses tensors the architecture does not know, as
// llama.cpp does), the packer packs every matrix and joins the groups
// declared with join(), and the workspace is sized from the widest output.
// Adding a matrix to an architecture is one line in its table.

#include <cstdint>
#include <string>
#include <vector>

#include "cria/model/model.h"

namespace cria::gguf {
class File;
}

namespace cria::model {

enum class Need { Required, Optional };

// What a linear layer does with its file's `.scale` tensor: llama.cpp's
// graphs multiply the product by it before adding the bias (attention
// projections), after adding the bias (build_ffn), or ignore it (the graphs
// that pass no scale to build_ffn: the file may still carry one).
enum class ScaleUse { AfterProduct, AfterBias, Ignored };

class TensorTable {
public:
    enum class Kind {
        Vector,        // small tensor copied to F32 (norms, rope factors)
        Matrix,        // viewed in place, multiplied by matmul (packed at load)
        LookupMatrix,  // viewed in place, rows looked up (token embedding: never packed)
        Bias,          // optional bias of a linear layer
        Scale,         // optional scalar multiplier of a linear layer's output
        ExpertMatrix,  // [k, rows, n_expert] (or any stack of matrices): packed at load like Matrix
        Ignored,       // accepted but not read (llama.cpp creates it; generation does not use it)
        ExpertGateUp,  // [k, 2 rows, n_expert]: per expert the gate rows then the up rows, two views
    };
    struct Entry {
        std::string name;
        std::vector<uint64_t> shape;  // ggml order, ne0 first
        Need need = Need::Required;
        Kind kind = Kind::Vector;
        std::vector<float>* vector = nullptr;  // Vector, Bias
        ops::TensorView* view = nullptr;       // Matrix, LookupMatrix
        Linear* linear = nullptr;              // Scale; Matrix: its layer when declared by linear()
        ops::TensorView* second_view = nullptr;  // ExpertGateUp: the up half (view: the gate half)
    };
    // Matrices that multiply the same input: packed as one matrix when the
    // packer can (then the parts' matrices are cleared; their biases and
    // scales stay and are applied to each part's rows).
    struct Join {
        std::vector<Linear*> parts;
        Linear* target = nullptr;
    };

    void vector(std::string name, uint64_t n, std::vector<float>* dst, Need need = Need::Required);
    // A small tensor of any shape copied to F32 (conv taps [K, C], ssm_a [N, d_inner]).
    void values(std::string name, std::vector<uint64_t> shape, std::vector<float>* dst, Need need = Need::Required);
    void matrix(std::string name, uint64_t cols, uint64_t rows, ops::TensorView* dst, Need need = Need::Required);
    void lookup_matrix(std::string name, uint64_t cols, uint64_t rows, ops::TensorView* dst);
    // `base`.weight [cols, rows] with the optional `base`.bias [rows],
    // `base`.scale [1] (used as `scale` says) and `base`.input_scale [1]
    // (accepted; llama.cpp's CPU path does not read it either).
    // use_bias false: the file's `.bias` is accepted and not applied (graphs that skip it).
    void linear(const std::string& base, uint64_t cols, uint64_t rows, Linear* dst, Need need = Need::Required,
                ScaleUse scale = ScaleUse::AfterProduct, bool use_bias = true);
    // `base`.weight [cols, rows, n_expert] (one matrix per expert) with the
    // optional per-expert `base`.scale [n_expert] (loaded when `scale` is not
    // Ignored: it multiplies each expert's output) and `base`.input_scale
    // (accepted, unread). With `bias`, the optional per-expert `base`.bias
    // [rows, n_expert] too (gpt-oss); without, a file with one is refused, as
    // llama.cpp refuses it for the families that create none.
    void experts(const std::string& base, uint64_t cols, uint64_t rows, uint64_t n_expert, ExpertLinear* dst,
                 Need need = Need::Required, ScaleUse scale = ScaleUse::AfterProduct, bool bias = false);
    // `name` [cols, rows, n]: n matrices of [cols, rows] stacked (MLA's
    // per-head k_b / v_b), packed at load like the experts' matrices.
    void matrix_stack(std::string name, uint64_t cols, uint64_t rows, uint64_t n, ops::TensorView* dst,
                      Need need = Need::Required);
    // The merged `base`.weight [cols, 2 rows, n_expert] of files that store
    // each expert's gate and up matrices as one (ffn_gate_up_exps): viewed
    // in place as the two halves. No `.scale` is declared (a file with one
    // is refused rather than run without it).
    void experts_gate_up(const std::string& base, uint64_t cols, uint64_t rows, uint64_t n_expert,
                         ExpertLinear* gate, ExpertLinear* up, Need need = Need::Required);
    void ignored(std::string name);
    void join(std::vector<Linear*> parts, Linear* target);

    const std::vector<Entry>& entries() const { return entries_; }
    const std::vector<Join>& joins() const { return joins_; }

private:
    std::vector<Entry> entries_;
    std::vector<Join> joins_;
};

// Reads every entry of `table` from `file` into its destination. Throws
// cria::Error naming the file and tensor for a missing required tensor, a
// wrong shape or type, or a tensor of the file that the table does not list.
void load_tensors(const gguf::File& file, const TensorTable& table, const std::string& arch_name);

// "blk.<layer>.<name>"
std::string layer_tensor(uint32_t layer, const char* name);

}  // namespace cria::model
