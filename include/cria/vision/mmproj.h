#pragma once
// A vision projector file ("mmproj", llama.cpp's clip layout): the vision
// encoder's hyperparameters (`clip.*` keys) and its weights (`v.*` encoder,
// `mm.*` projector), read once and checked completely, so the encoder code
// can trust every shape. A hostile or unsupported file gives one cria::Error
// that names the file and the key or tensor at fault.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/ops/tensor.h"

namespace cria::gguf {
class File;
}

namespace cria::vision {

// The projector families cria implements (`clip.projector_type`).
enum class ProjectorType {
    Gemma3,         // "gemma3": SigLIP ViT, 4x4 average pool, RMS norm, projection
    Mlp,            // "mlp": LLaVA-1.5, CLIP ViT with class token, 2-layer GELU MLP
    Qwen2vlMerger,  // "qwen2vl_merger": ViT with 2-D rotary, 2x2 patch merger MLP
    MuseGlimmer,    // "muse-glimmer": ViT with 2-D rotary and window attention, pixel shuffle, 3-layer MLP
};

std::string_view projector_type_name(ProjectorType type);

// The FFN activation inside the encoder blocks.
enum class Activation { GeluTanh, GeluQuick, GeluErf };

struct VisionHparams {
    ProjectorType projector = ProjectorType::Gemma3;
    int64_t image_size = 0;   // fixed-size preprocessors: the square input side
    int64_t patch_size = 0;   // conv kernel and stride
    int64_t n_embd = 0;       // encoder width
    int64_t n_ff = 0;         // encoder FFN width
    int64_t n_layer = 0;      // blocks stored in the file
    int64_t n_head = 0;
    float eps = 0.0f;         // layer-norm (and gemma3's RMS norm) epsilon
    int64_t spatial_merge = 2;  // muse-glimmer / qwen2vl: 2x2 patches per output token
    std::array<float, 3> image_mean{};
    std::array<float, 3> image_std{};
    Activation activation = Activation::GeluQuick;
    int64_t n_output = 0;     // projector output width (= the text model's n_embd)

    int64_t head_dim() const { return n_embd / n_head; }
};

// One weight. Matrices (the operands of matmul: projections, FFN, patch
// kernel) stay in the file's type, as llama.cpp multiplies them (real mmproj
// files are F16, so this halves the memory of a converted copy); everything
// the encoder reads value by value (biases, norms, position tables) is F32.
// ne is ggml's order, innermost first.
struct VisionTensor {
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    ElementType type = ElementType::F32;  // of `bytes` when they are used, else F32
    std::vector<float> data;    // the values when type is F32
    std::vector<uint8_t> bytes; // the file's bytes when type is not F32

    const float* ptr() const { return data.data(); }
    // The stored values in `type` (data or bytes).
    const void* raw() const { return type == ElementType::F32 ? static_cast<const void*>(data.data()) : bytes.data(); }
    // The tensor as a matmul operand [ne0, ne1 * ne2 * ne3] in its type.
    ops::TensorView matrix() const;
    // The values as F32 (converted when stored in another type).
    std::vector<float> values() const;
};

class Mmproj {
public:
    // Opens and validates `path`. Throws cria::Error on any problem.
    static std::unique_ptr<Mmproj> open(const std::string& path);
    // Validates an already opened GGUF (the fuzzer and the tests drive this).
    static std::unique_ptr<Mmproj> from_file(const gguf::File& file);

    const VisionHparams& hparams() const { return hparams_; }
    const std::string& path() const { return path_; }

    // The tensor called `name`; throws cria::Error when the file has none
    // (the loader already required every tensor the encoder reads).
    const VisionTensor& tensor(std::string_view name) const;
    // Null when the file has no such tensor (optional biases).
    const VisionTensor* find(std::string_view name) const;
    size_t tensor_count() const { return tensors_.size(); }

    // Blocks the encoder runs (mlp leaves the last stored one out).
    int64_t n_layer_run() const;
    // One line per fact, for `cria inspect`.
    std::vector<std::string> describe() const;

private:
    Mmproj() = default;
    std::string path_;
    VisionHparams hparams_;
    std::unordered_map<std::string, VisionTensor> tensors_;
};

// Whether an opened GGUF is an mmproj file (general.architecture = "clip").
bool is_mmproj(const gguf::File& file);

}  // namespace cria::vision
