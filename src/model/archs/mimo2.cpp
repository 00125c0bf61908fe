// mimo2 (Xiaomi MiMo-V2, llama.cpp's src/models/mimo2.cpp), dense form: Q, K
// and V as one fused attn_qkv (or three matrices), NeoX rope, per-layer
// sliding windows (attention.sliding_window_pattern: one flag per block,
// the appended MTP blocks included; a scalar flags every layer, as
// llama.cpp's get_key_or_arr fills it; the window and the flags are
// required, with rope.freq_base_swa for the windowed layers), optional
// attention sinks, SwiGLU. block_count counts the NextN (MTP) blocks
// (nextn_predict_layers): the trunk is the layers before them; their tensors
// are accepted here and run by draft-mtp (src/spec/mtp*), not by the trunk.
// The router/expert branch and attention.value_scale != 1 are refused
// (no file to check them against).

#include <string>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    for (const char* required : {"attention.layer_norm_rms_epsilon", "expert_feed_forward_length",
                                 "attention.sliding_window", "attention.sliding_window_pattern"})
        if (!keys.has(required)) keys.fail("missing required key '" + keys.key(required) + "'");
    const float value_scale = keys.f32("attention.value_scale", 1.0f);
    if (value_scale != 0.0f && value_scale != 1.0f)
        keys.fail("'" + keys.key("attention.value_scale") + "' = " + std::to_string(value_scale) +
                  " is not supported yet");
    const uint32_t blocks = hp.n_layer;  // block_count, the NextN blocks included
    const uint32_t nextn = keys.u32("nextn_predict_layers", 0);
    if (nextn >= blocks) keys.fail("nextn_predict_layers must be smaller than block_count");
    const char* pattern = "attention.sliding_window_pattern";
    std::vector<bool> swa = keys.is_array(pattern) ? keys.layer_flags(pattern, blocks)
                                                   : std::vector<bool>(blocks, keys.u32(pattern, 0) != 0);
    hp.n_layer_nextn = nextn;
    hp.n_layer = blocks - nextn;  // the trunk
    swa.resize(hp.n_layer);
    hp.swa_layers = swa;
    hp.nope_layers.assign(hp.n_layer, false);
    hp.n_swa = keys.u32("attention.sliding_window", 0);
    bool any_swa = false;
    for (bool b : hp.swa_layers) any_swa = any_swa || b;
    if (any_swa && hp.n_swa == 0)
        keys.fail("'" + keys.key("attention.sliding_window") + "' is 0 but sliding_window_pattern marks sliding-window layers");
    hp.rope_freq_base_swa = keys.f32("rope.freq_base_swa", hp.rope_freq_base);
    if (!(hp.rope_freq_base_swa > 0.0f)) keys.fail("'" + keys.key("rope.freq_base_swa") + "' must be positive");
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.plain_qkv = true;          // llama.cpp's graph applies no q/k/v biases
    o.attn_output_bias = false;  // ... nor an output bias (its scale, yes)
    declare_dense_tensors(hp, t, w, o);
    for (uint32_t l = 0; l < hp.n_layer; ++l)
        t.vector(layer_tensor(l, "attn_sinks.weight"), hp.n_head, &w.layers[l].attn_sinks, Need::Optional);
    // The NextN blocks: draft-mtp reads them from the file itself.
    for (uint32_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l) {
        for (const char* base : {"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_gate", "ffn_up",
                                 "ffn_down", "nextn.eh_proj", "nextn.embed_tokens", "nextn.shared_head_head"})
            for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                t.ignored(layer_tensor(l, (std::string(base) + suffix).c_str()));
        for (const char* norm : {"attn_norm", "ffn_norm", "attn_sinks", "nextn.enorm", "nextn.hnorm",
                                 "nextn.shared_head_norm", "layer_output_norm"})
            t.ignored(layer_tensor(l, (std::string(norm) + ".weight").c_str()));
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kMimo2{"mimo2", read_hparams, declare_tensors, forward, reference::llama};

}  // namespace cria::model::archs
