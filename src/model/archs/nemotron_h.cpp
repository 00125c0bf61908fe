// nemotron_h (NVIDIA Nemotron-H): every layer is exactly one of three kinds,
// each x += block(rms_norm(x) · attn_norm): a Mamba-2 mixer (head_count_kv 0
// and feed_forward_length 0), attention without any positional encoding
// (head_count_kv > 0, feed_forward_length 0; q/k/v/output biases and scales
// as the file has them), or a squared-ReLU MLP without gate
// (feed_forward_length > 0, whatever head_count_kv says; relu2_ffn.h). The forward pass tells the kinds
// apart by the weights the table loaded. nemotron_h_moe: the MLP layers are
// mixtures of squared-ReLU experts (relu2_moe_block), optionally in a latent
// space as wide as n_embd; narrower latents and MTP layers are refused. (The MLP layers get an unused KV-cache slot: the
// memory layout knows only attention and recurrent layers.)

#include <string>
#include <vector>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/hparams_keys.h"
#include "model/reference/ssm.h"
#include "model/relu2_ffn.h"
#include "model/ssm_block.h"
#include "model/ssm_tensors.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    read_ssm_hparams(keys, hp, SsmKind::Mamba2);
    const std::vector<uint32_t> kv = keys.u32_per_layer("attention.head_count_kv", hp.n_layer);
    const std::vector<uint32_t> ff = keys.u32_per_layer("feed_forward_length", hp.n_layer);
    if (kv.size() != hp.n_layer || ff.size() != hp.n_layer)
        keys.fail("'" + keys.key("attention.head_count_kv") + "' and '" + keys.key("feed_forward_length") +
                  "' must give every layer's kind");
    hp.recurrent_layers.assign(hp.n_layer, false);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const std::string blk = "blk." + std::to_string(l) + ".";
        hp.recurrent_layers[l] = kv[l] == 0 && ff[l] == 0;
        // The tensor table declares attention and MLP tensors as optional and
        // the forward pass dispatches on them: the file must hold exactly the
        // kind its keys say.
        const bool has_attention = keys.has_tensor(blk + "attn_q.weight") || keys.has_tensor(blk + "attn_qkv.weight");
        const bool has_mlp = keys.has_tensor(blk + (hp.n_expert > 0 ? "ffn_up_exps.weight" : "ffn_up.weight"));
        // llama.cpp: an MLP layer is one with feed_forward_length > 0 (whatever its
        // head_count_kv), attention one with head_count_kv > 0 and no MLP.
        if (has_attention != (kv[l] > 0 && ff[l] == 0) || has_mlp != (ff[l] > 0))
            keys.fail("layer " + std::to_string(l) + "'s tensors do not match its kind (head_count_kv " +
                      std::to_string(kv[l]) + ", feed_forward_length " + std::to_string(ff[l]) + ")");
    }
    if (hp.n_head_kv > 0 && hp.n_head == 0) keys.fail("the attention layers need '" + keys.key("attention.head_count") + "'");
    if (hp.head_dim != hp.head_dim_v) keys.fail("attention.key_length and value_length must be equal");
    hp.nope_layers.assign(hp.n_layer, true);  // no positional encoding at all
    hp.attention_scale = keys.f32_or_unset("attention.scale", hp.attention_scale);
}

// nemotron_h_moe: the MLP layers are mixtures of squared-ReLU experts with a
// shared expert, sigmoid routing with the exp_probs_b selection bias.
void read_hparams_moe(const HParamsKeys& keys, HParams& hp) {
    if (hp.n_expert == 0) keys.fail("nemotron_h_moe needs experts ('" + keys.key("expert_count") + "')");
    read_hparams(keys, hp);
    hp.n_ff_exp = keys.u32_or_unset("expert_feed_forward_length", hp.n_ff / hp.n_expert_used);
    if (hp.n_ff_exp == 0) keys.fail("the expert width of nemotron_h_moe is unknown");
    hp.n_ff_shexp = keys.u32("expert_shared_feed_forward_length", 0);
    hp.expert_gating = ExpertGating::Sigmoid;
    hp.expert_weights_norm = keys.boolean("expert_weights_norm", false);
    hp.expert_weights_scale = keys.f32("expert_weights_scale", 0.0f);
    // Experts in a latent space narrower than n_embd need its width kept per model: not yet.
    if (const uint32_t latent = keys.u32_or_unset("moe_latent_size", 0); latent != 0 && latent != hp.n_embd)
        keys.fail("'" + keys.key("moe_latent_size") + "' other than the embedding width is not supported yet");
    if (keys.u32("nextn_predict_layers", 0) != 0) keys.fail("nemotron_h_moe MTP layers are not supported yet");
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    const uint64_t E = hp.n_embd, F = hp.n_ff;
    t.lookup_matrix("token_embd.weight", E, hp.n_vocab, &w.token_embd);
    t.vector("output_norm.weight", E, &w.output_norm);
    t.linear("output", E, hp.n_vocab, &w.output, Need::Optional);  // absent: tied to token_embd
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        if (hp.is_recurrent(l)) {
            declare_ssm_tensors(hp, t, lw, l, SsmKind::Mamba2, /*conv_bias_required=*/false);
            continue;
        }
        // Attention or MLP (read_hparams checked the file holds exactly one).
        if (hp.fused_qkv) {
            t.linear(name("attn_qkv"), E, hp.n_embd_q() + hp.n_embd_k() + hp.n_embd_v(), &lw.wqkv, Need::Optional);
        } else {
            t.linear(name("attn_q"), E, hp.n_embd_q(), &lw.wq, Need::Optional);
            t.linear(name("attn_k"), E, hp.n_embd_k(), &lw.wk, Need::Optional);
            t.linear(name("attn_v"), E, hp.n_embd_v(), &lw.wv, Need::Optional);
            t.join({&lw.wq, &lw.wk, &lw.wv}, &lw.wqkv);
        }
        t.linear(name("attn_output"), uint64_t{hp.n_head} * hp.head_dim_v, E, &lw.wo, Need::Optional);
        if (hp.n_expert == 0) {
            t.linear(name("ffn_up"), E, F, &lw.up, Need::Optional, ScaleUse::AfterBias);
            t.linear(name("ffn_down"), F, E, &lw.down, Need::Optional, ScaleUse::AfterBias);
            continue;
        }
        const uint64_t X = hp.n_expert, Fe = hp.n_ff_exp, Fs = hp.n_ff_shexp;
        t.linear(name("ffn_gate_inp"), E, X, &lw.gate_inp, Need::Optional);
        t.vector(name("exp_probs_b.bias"), X, &lw.exp_probs_b, Need::Optional);
        // Plain products in llama.cpp's graph (ggml_mul_mat): no bias, no scale.
        t.linear(name("ffn_latent_down"), E, E, &lw.latent_down, Need::Optional, ScaleUse::Ignored, false);
        t.linear(name("ffn_latent_up"), E, E, &lw.latent_up, Need::Optional, ScaleUse::Ignored, false);
        t.experts(name("ffn_up_exps"), E, Fe, X, &lw.up_exps, Need::Optional);
        t.experts(name("ffn_down_exps"), Fe, E, X, &lw.down_exps, Need::Optional);
        if (Fs > 0) {
            t.linear(name("ffn_up_shexp"), E, Fs, &lw.up_shexp, Need::Optional, ScaleUse::AfterBias);
            t.linear(name("ffn_down_shexp"), Fs, E, &lw.down_shexp, Need::Optional, ScaleUse::AfterBias);
        }
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        if (s.hp.is_recurrent(l))
            blocks::mamba2_block(s, l);
        else if (s.w.layers[l].down.present())
            blocks::relu2_ffn_block(s, l);
        else if (s.w.layers[l].up_exps.present())
            blocks::relu2_moe_block(s, l);
        else
            blocks::attention_block(s, l, {});
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kNemotronH{"nemotron_h", read_hparams, declare_tensors, forward, reference::nemotron_h,
                                       /*supports_experts=*/false, /*has_recurrent_layers=*/true};
extern const ArchDefinition kNemotronHMoe{"nemotron_h_moe", read_hparams_moe, declare_tensors, forward,
                                          reference::nemotron_h, /*supports_experts=*/true,
                                          /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
