// Loading and validating an mmproj file. Every key the encoder uses is read
// here, every tensor it reads is required here with its exact shape, so a
// file that passes cannot make the encoder index out of bounds.

#include "cria/vision/mmproj.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/matmul/matmul.h"
#include "cria/quant/quantize.h"

namespace cria::vision {
namespace {

// Sizes beyond these are no real vision encoder; refusing them early keeps
// every product below (patches x width, grid sizes) far from overflow.
constexpr int64_t kMaxWidth = 1 << 16;
constexpr int64_t kMaxLayers = 512;
constexpr int64_t kMaxPatch = 256;
constexpr int64_t kMaxImageSize = 4096;  // real encoders use 224 to 1024

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error("mmproj " + path + ": " + what);
}

std::string shape_text(const std::array<int64_t, 4>& ne, size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

int64_t required_int(const gguf::File& f, const std::string& key, int64_t lo, int64_t hi) {
    const auto v = f.get_u32(key);
    if (!v) fail(f.path(), "missing key " + key);
    if (static_cast<int64_t>(*v) < lo || static_cast<int64_t>(*v) > hi)
        fail(f.path(), key + " = " + std::to_string(*v) + " is outside [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
    return *v;
}

std::array<float, 3> rgb_triple(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.find(key);
    if (v == nullptr) fail(f.path(), "missing key " + key);
    if (!v->is_array() || v->size() != 3) fail(f.path(), key + " must be an array of 3 numbers");
    std::array<float, 3> out{};
    for (size_t i = 0; i < 3; ++i) {
        const auto x = v->at(i).as_f64();
        if (!x || !std::isfinite(*x)) fail(f.path(), key + " must hold 3 finite numbers");
        out[i] = static_cast<float>(*x);
    }
    return out;
}

ProjectorType projector_from_name(const gguf::File& f, const std::string& name) {
    if (name == "gemma3") return ProjectorType::Gemma3;
    if (name == "mlp") return ProjectorType::Mlp;
    if (name == "qwen2vl_merger") return ProjectorType::Qwen2vlMerger;
    if (name == "muse-glimmer") return ProjectorType::MuseGlimmer;
    fail(f.path(), "projector type \"" + name +
                       "\" is not supported (supported: gemma3, mlp, qwen2vl_merger, muse-glimmer)");
}

// Collects the tensors and checks each one the encoder reads.
class TensorChecker {
public:
    TensorChecker(const gguf::File& file, std::unordered_map<std::string, VisionTensor>& out)
        : file_(file), out_(out) {}

    void require(const std::string& name, std::initializer_list<int64_t> shape) { check(name, shape, true, false); }
    void optional(const std::string& name, std::initializer_list<int64_t> shape) { check(name, shape, false, false); }
    // A matmul operand: kept in the file's type when matmul multiplies it so.
    void matrix(const std::string& name, std::initializer_list<int64_t> shape) { check(name, shape, true, true); }
    bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }
    // ne[dim] of a tensor that must exist (to learn a size the file decides).
    int64_t extent(const std::string& name, int dim) const {
        const gguf::TensorInfo* t = file_.find_tensor(name);
        if (t == nullptr) fail(file_.path(), "missing tensor " + name);
        return static_cast<int64_t>(t->ne[dim]);
    }

private:
    void check(const std::string& name, std::initializer_list<int64_t> shape, bool needed, bool as_matrix) {
        const gguf::TensorInfo* t = file_.find_tensor(name);
        if (t == nullptr) {
            if (needed) fail(file_.path(), "missing tensor " + name);
            return;
        }
        std::array<int64_t, 4> want{1, 1, 1, 1};
        std::copy(shape.begin(), shape.end(), want.begin());
        std::array<int64_t, 4> got{};
        for (int d = 0; d < 4; ++d) got[d] = static_cast<int64_t>(t->ne[d]);
        if (got != want)
            fail(file_.path(), "tensor " + name + " has shape " + shape_text(got, std::max<size_t>(t->n_dims, 1)) +
                                   ", expected " + shape_text(want, shape.size()));
        if (!quant::can_dequantize(t->type))
            fail(file_.path(), "tensor " + name + " has type " + std::string(element_type_name(t->type)) +
                                   ", which cria cannot read");
        VisionTensor v;
        v.ne = got;
        const auto bytes = file_.tensor_data(*t);
        if (as_matrix && t->type != ElementType::F32 && matmul::supports_weight_type(t->type)) {
            v.type = t->type;
            v.bytes.assign(bytes.begin(), bytes.end());
        } else {
            const int64_t n_rows = got[1] * got[2] * got[3];
            v.data.resize(static_cast<size_t>(got[0] * n_rows));
            const size_t row_bytes = bytes.size() / static_cast<size_t>(n_rows);
            for (int64_t r = 0; r < n_rows; ++r)
                quant::dequantize_row(t->type, bytes.data() + r * row_bytes, v.data.data() + r * got[0], got[0]);
        }
        out_[name] = std::move(v);
    }

    const gguf::File& file_;
    std::unordered_map<std::string, VisionTensor>& out_;
};

void check_blocks(TensorChecker& c, const VisionHparams& h, int64_t n_blocks) {
    const int64_t C = h.n_embd, F = h.n_ff;
    for (int64_t il = 0; il < n_blocks; ++il) {
        const std::string b = "v.blk." + std::to_string(il) + ".";
        for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
            c.matrix(b + p + ".weight", {C, C});
            c.optional(b + p + ".bias", {C});
        }
        for (const char* n : {"ln1", "ln2"}) {
            c.require(b + n + ".weight", {C});
            c.require(b + n + ".bias", {C});
        }
        c.matrix(b + "ffn_up.weight", {C, F});
        c.optional(b + "ffn_up.bias", {F});
        c.matrix(b + "ffn_down.weight", {F, C});
        c.optional(b + "ffn_down.bias", {C});
    }
}

// ne [a, b] -> ne [b, a] with the values moved accordingly.
void transpose_matrix(VisionTensor& t) {
    const int64_t a = t.ne[0], b = t.ne[1];
    std::vector<float> out(t.data.size());
    for (int64_t j = 0; j < b; ++j)
        for (int64_t i = 0; i < a; ++i) out[static_cast<size_t>(i * b + j)] = t.data[static_cast<size_t>(j * a + i)];
    t.data = std::move(out);
    t.ne[0] = b;
    t.ne[1] = a;
}

}  // namespace

std::string_view projector_type_name(ProjectorType type) {
    switch (type) {
        case ProjectorType::Gemma3: return "gemma3";
        case ProjectorType::Mlp: return "mlp";
        case ProjectorType::Qwen2vlMerger: return "qwen2vl_merger";
        case ProjectorType::MuseGlimmer: return "muse-glimmer";
    }
    return "?";
}

bool is_mmproj(const gguf::File& file) { return file.get_string("general.architecture", "") == "clip"; }

std::unique_ptr<Mmproj> Mmproj::open(const std::string& path) {
    const auto file = gguf::File::open(path);
    return from_file(*file);
}

std::unique_ptr<Mmproj> Mmproj::from_file(const gguf::File& f) {
    if (!is_mmproj(f)) fail(f.path(), "general.architecture is not \"clip\"; this is not a projector (mmproj) file");
    if (!f.get_bool("clip.has_vision_encoder", false))
        fail(f.path(), "clip.has_vision_encoder is not true (audio-only projectors are not supported)");
    std::unique_ptr<Mmproj> m(new Mmproj());
    m->path_ = f.path();
    VisionHparams& h = m->hparams_;
    const auto type_name = f.get_string("clip.projector_type");
    if (!type_name) fail(f.path(), "missing key clip.projector_type");
    h.projector = projector_from_name(f, *type_name);
    h.patch_size = required_int(f, "clip.vision.patch_size", 1, kMaxPatch);
    h.image_size = required_int(f, "clip.vision.image_size", h.patch_size, kMaxImageSize);
    h.n_embd = required_int(f, "clip.vision.embedding_length", 1, kMaxWidth);
    h.n_ff = required_int(f, "clip.vision.feed_forward_length", 1, kMaxWidth * 4);
    h.n_layer = required_int(f, "clip.vision.block_count", 1, kMaxLayers);
    h.n_head = required_int(f, "clip.vision.attention.head_count", 1, h.n_embd);
    const auto eps = f.get_f32("clip.vision.attention.layer_norm_epsilon");
    if (!eps || !(*eps > 0.0f) || !(*eps < 1.0f))
        fail(f.path(), "clip.vision.attention.layer_norm_epsilon must be present and in (0, 1)");
    h.eps = *eps;
    h.image_mean = rgb_triple(f, "clip.vision.image_mean");
    h.image_std = rgb_triple(f, "clip.vision.image_std");
    for (float s : h.image_std)
        if (!(s > 0.0f)) fail(f.path(), "clip.vision.image_std values must be positive");
    if (h.n_embd % h.n_head != 0)
        fail(f.path(), "embedding_length " + std::to_string(h.n_embd) + " is not a multiple of head_count " +
                           std::to_string(h.n_head));
    if (f.find("clip.vision.spatial_merge_size") != nullptr)
        h.spatial_merge = required_int(f, "clip.vision.spatial_merge_size", 1, 16);
    if (f.find("clip.vision.image_grid_pinpoints") != nullptr)
        fail(f.path(), "clip.vision.image_grid_pinpoints (LLaVA-1.6 tiling) is not supported");
    h.activation = f.get_bool("clip.use_gelu", false) ? Activation::GeluTanh : Activation::GeluQuick;

    TensorChecker c(f, m->tensors_);
    const int64_t C = h.n_embd, P = h.patch_size;
    const int64_t grid = h.image_size / P;
    switch (h.projector) {
        case ProjectorType::Gemma3: {
            // The 4x4 pool needs the fixed grid to split evenly.
            if (h.image_size % (P * 4) != 0)
                fail(f.path(), "gemma3: image_size must be a multiple of 4 * patch_size");
            c.matrix("v.patch_embd.weight", {P, P, 3, C});
            c.require("v.patch_embd.bias", {C});
            c.require("v.position_embd.weight", {C, grid * grid});
            c.require("v.post_ln.weight", {C});
            c.require("v.post_ln.bias", {C});
            c.require("mm.soft_emb_norm.weight", {C});
            h.n_output = c.extent("mm.input_projection.weight", 0);
            if (h.n_output < 1 || h.n_output > kMaxWidth) fail(f.path(), "mm.input_projection.weight: bad width");
            c.require("mm.input_projection.weight", {h.n_output, C});
            check_blocks(c, h, h.n_layer);
            // Gemma 3 stores this one matrix transposed (ne [n_text, n_vision],
            // y_j = sum_i x_i W[j, i]); turned into the usual [in, out] layout
            // here, so the encoder applies it like every other linear layer.
            transpose_matrix(m->tensors_.at("mm.input_projection.weight"));
            break;
        }
        case ProjectorType::Mlp: {
            if (h.n_layer < 2) fail(f.path(), "mlp: needs at least 2 blocks (the last stored one is not run)");
            c.require("v.class_embd", {C});
            c.matrix("v.patch_embd.weight", {P, P, 3, C});
            c.optional("v.patch_embd.bias", {C});
            c.require("v.position_embd.weight", {C, grid * grid + 1});
            c.require("v.pre_ln.weight", {C});
            c.require("v.pre_ln.bias", {C});
            const int64_t hidden = c.extent("mm.0.weight", 1);
            h.n_output = c.extent("mm.2.weight", 1);
            if (hidden < 1 || hidden > kMaxWidth * 4 || h.n_output < 1 || h.n_output > kMaxWidth)
                fail(f.path(), "mlp: projector widths out of range");
            c.matrix("mm.0.weight", {C, hidden});
            c.require("mm.0.bias", {hidden});
            c.matrix("mm.2.weight", {hidden, h.n_output});
            c.require("mm.2.bias", {h.n_output});
            check_blocks(c, h, h.n_layer - 1);
            break;
        }
        case ProjectorType::Qwen2vlMerger: {
            if (h.head_dim() % 4 != 0) fail(f.path(), "qwen2vl_merger: head size must be a multiple of 4 (2-D rotary)");
            h.spatial_merge = 2;
            c.matrix("v.patch_embd.weight", {P, P, 3, C});
            c.matrix("v.patch_embd.weight.1", {P, P, 3, C});
            c.optional("v.patch_embd.bias", {C});
            c.require("v.post_ln.weight", {C});
            c.require("v.post_ln.bias", {C});
            const int64_t merged = 4 * C;
            h.n_output = c.extent("mm.2.weight", 1);
            if (h.n_output < 1 || h.n_output > kMaxWidth) fail(f.path(), "qwen2vl_merger: bad output width");
            c.matrix("mm.0.weight", {merged, merged});
            c.require("mm.0.bias", {merged});
            c.matrix("mm.2.weight", {merged, h.n_output});
            c.require("mm.2.bias", {h.n_output});
            check_blocks(c, h, h.n_layer);
            break;
        }
        case ProjectorType::MuseGlimmer: {
            if (h.head_dim() % 4 != 0) fail(f.path(), "muse-glimmer: head size must be a multiple of 4 (2-D rotary)");
            if (h.spatial_merge != 2) fail(f.path(), "muse-glimmer: only spatial_merge_size 2 is supported");
            h.activation = Activation::GeluErf;
            c.matrix("v.patch_embd.weight", {P, P, 3, C});
            c.require("v.patch_embd.bias", {C});
            const int64_t n_pos = c.extent("v.position_embd.weight", 1);
            const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n_pos))));
            if (side < 1 || side * side != n_pos)
                fail(f.path(), "muse-glimmer: v.position_embd.weight must hold a square table of positions");
            c.require("v.position_embd.weight", {C, n_pos});
            for (const char* n : {"v.pre_ln", "v.post_ln"}) {
                c.require(std::string(n) + ".weight", {C});
                c.require(std::string(n) + ".bias", {C});
            }
            const int64_t h1 = c.extent("mm.0.weight", 1), h2 = c.extent("mm.1.weight", 1);
            h.n_output = c.extent("mm.2.weight", 1);
            for (int64_t w : {h1, h2, h.n_output})
                if (w < 1 || w > kMaxWidth * 4) fail(f.path(), "muse-glimmer: projector widths out of range");
            c.matrix("mm.0.weight", {4 * C, h1});
            c.matrix("mm.1.weight", {h1, h2});
            c.matrix("mm.2.weight", {h2, h.n_output});
            check_blocks(c, h, h.n_layer);
            break;
        }
    }
    const auto proj_dim = f.get_u32("clip.vision.projection_dim");
    if (proj_dim && static_cast<int64_t>(*proj_dim) != h.n_output)
        fail(f.path(), "clip.vision.projection_dim = " + std::to_string(*proj_dim) +
                           " but the projector's last layer is " + std::to_string(h.n_output) + " wide");
    return m;
}

ops::TensorView VisionTensor::matrix() const {
    return ops::TensorView::contiguous(type, raw(), {ne[0], ne[1] * ne[2] * ne[3]});
}

std::vector<float> VisionTensor::values() const {
    if (type == ElementType::F32) return data;
    const int64_t n_rows = ne[1] * ne[2] * ne[3];
    std::vector<float> out(static_cast<size_t>(ne[0] * n_rows));
    const size_t row_bytes = bytes.size() / static_cast<size_t>(n_rows);
    for (int64_t r = 0; r < n_rows; ++r)
        quant::dequantize_row(type, bytes.data() + r * row_bytes, out.data() + r * ne[0], ne[0]);
    return out;
}

const VisionTensor* Mmproj::find(std::string_view name) const {
    const auto it = tensors_.find(std::string(name));
    return it == tensors_.end() ? nullptr : &it->second;
}

const VisionTensor& Mmproj::tensor(std::string_view name) const {
    const VisionTensor* t = find(name);
    if (t == nullptr) throw Error("mmproj " + path_ + ": missing tensor " + std::string(name));
    return *t;
}

int64_t Mmproj::n_layer_run() const {
    return hparams_.projector == ProjectorType::Mlp ? hparams_.n_layer - 1 : hparams_.n_layer;
}

std::vector<std::string> Mmproj::describe() const {
    const VisionHparams& h = hparams_;
    auto act = [&] {
        switch (h.activation) {
            case Activation::GeluTanh: return "gelu (tanh)";
            case Activation::GeluQuick: return "quick gelu";
            case Activation::GeluErf: return "gelu (erf)";
        }
        return "?";
    }();
    char buf[512];
    std::vector<std::string> lines;
    lines.push_back("projector: " + std::string(projector_type_name(h.projector)));
    std::snprintf(buf, sizeof buf, "encoder: %lld blocks (%lld run), width %lld, %lld heads, FFN %lld (%s), eps %g",
                  static_cast<long long>(h.n_layer), static_cast<long long>(n_layer_run()),
                  static_cast<long long>(h.n_embd), static_cast<long long>(h.n_head), static_cast<long long>(h.n_ff),
                  act, static_cast<double>(h.eps));
    lines.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "input: patch %lld, image size %lld, mean (%g, %g, %g), std (%g, %g, %g)",
                  static_cast<long long>(h.patch_size), static_cast<long long>(h.image_size),
                  static_cast<double>(h.image_mean[0]), static_cast<double>(h.image_mean[1]),
                  static_cast<double>(h.image_mean[2]), static_cast<double>(h.image_std[0]),
                  static_cast<double>(h.image_std[1]), static_cast<double>(h.image_std[2]));
    lines.emplace_back(buf);
    lines.push_back("output: " + std::to_string(h.n_output) + " values per image token (the text model's n_embd)");
    return lines;
}

}  // namespace cria::vision
