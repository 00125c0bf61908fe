// falcon-h1: a parallel hybrid. Every layer runs attention and a Mamba-2
// mixer side by side on the same normed input u = rms_norm(x) · attn_norm,
// then a SwiGLU feed-forward block:
//   h = x + attention(u) + mamba2(u);  x = h + ffn(rms_norm(h) · ffn_norm).
// So every layer keeps both a KV cache and a recurrent state
// (HParams::recurrent_with_attention). Attention: NeoX rope over n_rot
// dimensions without the file's rope_freqs (llama.cpp's graph passes none),
// q/k/v biases and scales as the file has them, attn_output's scale but not
// its bias, scores scaled by attention.scale or 1/sqrt(head_dim). The
// feed-forward input norm is the suffix-less `blk.N.ffn_norm`; its matrices'
// biases are used, their `.scale`s are not (build_ffn gets none). The μP
// multipliers of the original checkpoints are folded into the weights by
// llama.cpp's converter, so none is applied here. ssm_norm and
// ssm_conv1d.bias are optional.

#include <cmath>
#include <string>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/ssm_block.h"
#include "model/ssm_tensors.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    read_ssm_hparams(keys, hp, SsmKind::Mamba2);
    if (hp.n_head == 0 || hp.n_head_kv == 0)
        keys.fail("every falcon-h1 layer attends: '" + keys.key("attention.head_count") + "' and '" +
                  keys.key("attention.head_count_kv") + "' must be positive");
    if (hp.n_ff == 0) keys.fail("'" + keys.key("feed_forward_length") + "' must be positive");
    hp.recurrent_layers.assign(hp.n_layer, true);
    hp.recurrent_with_attention = true;
    hp.rope_order = RopeOrder::NeoX;
    hp.attention_scale = keys.f32_or_unset("attention.scale", 1.0f / std::sqrt(static_cast<float>(hp.head_dim_v)));
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_norm = "ffn_norm";       // no `.weight` suffix in falcon-h1 files
    o.ffn_scales = false;          // llama.cpp's graph passes no scales to build_ffn
    o.attn_output_bias = false;    // loaded by llama.cpp, not applied
    declare_dense_tensors(hp, t, w, o);
    t.ignored("rope_freqs.weight");  // loaded by llama.cpp, not passed to its rope
    for (uint32_t l = 0; l < hp.n_layer; ++l)
        declare_ssm_tensors(hp, t, w.layers[l], l, SsmKind::Mamba2, /*conv_bias_required=*/false,
                            /*norm_required=*/false);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    const ops::TensorView x = blocks::view(s.ws.x, s.hp.n_embd, s.n), o = blocks::view(s.ws.o, s.hp.n_embd, s.n);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        // attention_block leaves its normed input u in ws.h: the mixer reads
        // the same u, not the stream the attention output was added to.
        blocks::attention_block(s, l, {});
        blocks::mamba2_mixer(s, l);
        s.ops.add(x, o, x);
        blocks::ffn_block(s, l, {});
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kFalconH1{"falcon-h1", read_hparams, declare_tensors, forward, reference::llama,
                                      /*supports_experts=*/false, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
