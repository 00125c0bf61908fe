// The hyperparameters, tensor table and forward pass shared by qwen3next,
// qwen35 and qwen35moe (llama.cpp's src/models/qwen3next.cpp, qwen35.cpp,
// qwen35moe.cpp): see qwen_delta_net.h.

#include "model/archs/qwen_delta_net.h"

#include <string>

#include "cria/gguf/file.h"
#include "model/blocks.h"
#include "model/recurrent_layer_flags.h"

namespace cria::model::archs {
namespace {

uint32_t require_positive(const HParamsKeys& keys, std::string_view suffix) {
    const uint32_t v = keys.require_u32(suffix);
    if (v == 0) keys.fail("'" + keys.key(suffix) + "' must be positive");
    return v;
}

// IMROPE gives every rotated pair of a text token its position when the
// first three sections cover it (ggml's rope_multi: pair i is in sector
// i % sum; sector s belongs to section s % 3 while s < 3 * that section's
// size); a pair left to the fourth section would turn by position 0, which
// text-only NeoX rope does not model.
void check_imrope_sections(const HParamsKeys& keys, const HParams& hp) {
    const std::vector<uint32_t> sections = keys.u32_per_layer("rope.dimension_sections", 4);
    if (sections.empty()) keys.fail("'" + keys.key("rope.dimension_sections") + "' is missing");
    uint64_t sum = 0;
    for (uint32_t s : sections) sum += s;
    for (uint32_t pair = 0; pair < hp.n_rot / 2; ++pair) {
        const uint64_t sector = sum ? pair % sum : pair;
        const uint64_t section = sector % 3;
        if (sector >= 3 * uint64_t{sections[section]})
            keys.fail("'" + keys.key("rope.dimension_sections") + "' leaves rotated pair " + std::to_string(pair) +
                      " to a section other than the text position's: not supported");
    }
}

}  // namespace

void read_qwen_delta_net_hparams(const HParamsKeys& keys, HParams& hp, const QwenDeltaNetOptions& o) {
    hp.rope_order = RopeOrder::NeoX;
    hp.has_qk_norm = true;
    hp.attn_output_gate = true;
    if (hp.head_dim != hp.head_dim_v) keys.fail("attention key_length and value_length must be equal");
    if (!o.qwen3next) check_imrope_sections(keys, hp);

    const uint32_t n_blocks = hp.n_layer;
    const uint32_t nextn = keys.u32("nextn_predict_layers", 0);
    if (nextn >= n_blocks) keys.fail("'" + keys.key("nextn_predict_layers") + "' must be smaller than block_count");
    hp.n_layer_nextn = nextn;
    hp.n_layer = n_blocks - nextn;  // the trunk; the MTP blocks are loaded, not run

    HParams::DeltaNet& dn = hp.delta_net;
    dn.conv_kernel = require_positive(keys, "ssm.conv_kernel");
    dn.head_dim = require_positive(keys, "ssm.state_size");
    dn.n_k_heads = require_positive(keys, "ssm.group_count");
    dn.n_v_heads = require_positive(keys, "ssm.time_step_rank");
    dn.grouped_heads = o.qwen3next;
    if (dn.conv_kernel > 64) keys.fail("'" + keys.key("ssm.conv_kernel") + "' is larger than 64");
    if (dn.head_dim > 1024 || dn.n_v_heads > 4096)
        keys.fail("delta-net state of " + std::to_string(dn.head_dim) + " x " + std::to_string(dn.head_dim) + " x " +
                  std::to_string(dn.n_v_heads) + " is too large");
    if (dn.n_v_heads % dn.n_k_heads != 0)
        keys.fail("'" + keys.key("ssm.time_step_rank") + "' (" + std::to_string(dn.n_v_heads) +
                  ") must be a multiple of '" + keys.key("ssm.group_count") + "' (" + std::to_string(dn.n_k_heads) +
                  ")");
    // llama.cpp sizes value heads as inner_size / time_step_rank and key
    // heads as state_size, and its state as square: they must agree.
    if (keys.require_u32("ssm.inner_size") != dn.n_value())
        keys.fail("'" + keys.key("ssm.inner_size") + "' must be ssm.time_step_rank x ssm.state_size (" +
                  std::to_string(dn.n_value()) + ")");
    std::vector<bool> layers = recurrent_layer_flags(keys, n_blocks, /*default_interval=*/4);
    layers.resize(hp.n_layer);
    dn.layers = std::move(layers);
    // The recurrent memory keeps, per delta-net layer and sequence, the
    // convolution's last inputs and the delta rule's matrices.
    hp.recurrent_layers = dn.layers;
    if (dn.conv_state_floats() > UINT32_MAX || dn.matrix_state_floats() > UINT32_MAX)
        keys.fail("delta-net state too large");
    hp.recurrent_conv_floats = static_cast<uint32_t>(dn.conv_state_floats());
    hp.recurrent_state_floats = static_cast<uint32_t>(dn.matrix_state_floats());

    if (o.qwen3next) {
        for (uint32_t l = 0; l < hp.n_layer; ++l)
            if (dn.layers[l] && keys.has_tensor(layer_tensor(l, "ssm_in.weight")) &&
                !keys.has_tensor(layer_tensor(l, "attn_qkv.weight")))
                keys.fail("the legacy ssm_in layout of qwen3next delta-net layers (no attn_qkv) is not supported");
    }
    if (hp.n_expert > 0) {
        for (uint32_t l = 0; l < hp.n_layer; ++l) {
            const bool merged = keys.has_tensor(layer_tensor(l, "ffn_gate_up_exps.weight"));
            const bool gate = keys.has_tensor(layer_tensor(l, "ffn_gate_exps.weight"));
            const bool up = keys.has_tensor(layer_tensor(l, "ffn_up_exps.weight"));
            if (merged ? (gate || up) : !(gate && up))
                keys.fail("layer " + std::to_string(l) +
                          " must have either ffn_gate_up_exps or both ffn_gate_exps and ffn_up_exps");
        }
        hp.n_ff_exp = keys.u32_or_unset("expert_feed_forward_length", hp.n_ff / hp.n_expert_used);
        hp.n_ff_shexp = keys.u32_or_unset("expert_shared_feed_forward_length", hp.n_ff);
        hp.expert_gating = ExpertGating::Softmax;
        hp.expert_weights_norm = true;
        hp.expert_weights_scale = 0.0f;
    }
}

void declare_qwen_delta_net_tensors(const HParams& hp, TensorTable& t, Weights& w, const QwenDeltaNetOptions& o) {
    const uint64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff;
    const HParams::DeltaNet& dn = hp.delta_net;
    // qwen35's graph multiplies every product by its `.scale`; qwen3next's
    // every product but the delta net's (attn_qkv, attn_gate, ssm_ba,
    // ssm_out; found on llama.cpp's fixture: applying any of them is off).
    const ScaleUse ffn_scale = ScaleUse::AfterBias;
    const ScaleUse delta_scale = o.qwen3next ? ScaleUse::Ignored : ScaleUse::AfterProduct;
    t.lookup_matrix("token_embd.weight", E, V, &w.token_embd);
    t.vector("output_norm.weight", E, &w.output_norm);
    t.linear("output", E, V, &w.output, Need::Optional);  // absent: tied to token_embd

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        t.vector(name("post_attention_norm.weight"), E, &lw.ffn_norm);  // the feed-forward block's input norm
        if (hp.is_delta_net(l)) {
            DeltaNetWeights& d = lw.delta;
            t.linear(name("attn_qkv"), E, dn.n_conv(), &d.qkv, Need::Required, delta_scale);
            t.linear(name("attn_gate"), E, dn.n_value(), &d.z, Need::Required, delta_scale);
            if (o.qwen3next) {
                t.linear(name("ssm_ba"), E, 2 * uint64_t{dn.n_v_heads}, &d.ba, Need::Required, delta_scale);
                for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                    t.ignored(name("ssm_in") + suffix);  // legacy [q; k; v; z]: attn_qkv and attn_gate are used
            } else {
                t.linear(name("ssm_beta"), E, dn.n_v_heads, &d.beta);
                t.linear(name("ssm_alpha"), E, dn.n_v_heads, &d.alpha);
            }
            t.values(name("ssm_conv1d.weight"), {dn.conv_kernel, dn.n_conv()}, &d.conv);
            t.vector(name("ssm_dt.bias"), dn.n_v_heads, &d.dt_bias);
            t.vector(name("ssm_a"), dn.n_v_heads, &d.a);
            t.vector(name("ssm_norm.weight"), dn.head_dim, &d.norm);
            t.linear(name("ssm_out"), dn.n_value(), E, &d.out, Need::Required, delta_scale);
        } else {
            // [q; gate] per head; llama.cpp's graph adds none of the biases.
            t.linear(name("attn_q"), E, 2 * uint64_t{hp.n_embd_q()}, &lw.wq, Need::Required, ScaleUse::AfterProduct,
                     false);
            t.linear(name("attn_k"), E, hp.n_embd_k(), &lw.wk, Need::Required, ScaleUse::AfterProduct, false);
            t.linear(name("attn_v"), E, hp.n_embd_v(), &lw.wv, Need::Required, ScaleUse::AfterProduct, false);
            t.linear(name("attn_output"), hp.n_embd_q(), E, &lw.wo, Need::Required, ScaleUse::AfterProduct, false);
            t.vector(name("attn_q_norm.weight"), hp.head_dim, &lw.q_norm);
            t.vector(name("attn_k_norm.weight"), hp.head_dim, &lw.k_norm);
        }
        if (hp.is_moe(l)) {
            const uint64_t X = hp.n_expert, Fe = hp.n_ff_exp;
            t.linear(name("ffn_gate_inp"), E, X, &lw.gate_inp);
            // Gate and up as one merged tensor or as two (read_hparams checked
            // that a file has exactly one form).
            t.experts_gate_up(name("ffn_gate_up_exps"), E, Fe, X, &lw.gate_exps, &lw.up_exps, Need::Optional);
            t.experts(name("ffn_gate_exps"), E, Fe, X, &lw.gate_exps, Need::Optional);
            t.experts(name("ffn_up_exps"), E, Fe, X, &lw.up_exps, Need::Optional);
            t.experts(name("ffn_down_exps"), Fe, E, X, &lw.down_exps, Need::Required,
                      ScaleUse::AfterProduct);
            const uint64_t Fs = hp.n_ff_shexp;
            t.linear(name("ffn_gate_inp_shexp"), E, 1, &lw.gate_inp_shexp);
            t.linear(name("ffn_gate_shexp"), E, Fs, &lw.gate_shexp, Need::Required, ffn_scale);
            t.linear(name("ffn_up_shexp"), E, Fs, &lw.up_shexp, Need::Required, ffn_scale);
            t.linear(name("ffn_down_shexp"), Fs, E, &lw.down_shexp, Need::Required, ffn_scale);
        } else {
            t.linear(name("ffn_gate"), E, F, &lw.gate, Need::Required, ffn_scale);
            t.linear(name("ffn_up"), E, F, &lw.up, Need::Required, ffn_scale);
            t.join({&lw.gate, &lw.up}, &lw.gate_up);
            t.linear(name("ffn_down"), F, E, &lw.down, Need::Required, ffn_scale);
        }
    }
    // The MTP blocks after the trunk (a drafter's, not run here): accepted.
    for (uint32_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l)
        for (const char* base : {"attn_norm", "post_attention_norm", "attn_q", "attn_k", "attn_v", "attn_qkv",
                                 "attn_output", "attn_q_norm", "attn_k_norm", "ffn_gate", "ffn_up", "ffn_down",
                                 "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_gate_up_exps", "ffn_down_exps",
                                 "ffn_gate_inp_shexp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
                                 "nextn.eh_proj", "nextn.enorm", "nextn.hnorm", "nextn.embed_tokens",
                                 "nextn.shared_head_head", "nextn.shared_head_norm"})
            for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                t.ignored(layer_tensor(l, base) + suffix);
}

}  // namespace cria::model::archs

namespace cria::model::archs {

void qwen_delta_net_forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, /*scale=*/false);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        if (s.hp.is_delta_net(l))
            blocks::delta_net_block(s, l);
        else
            blocks::gated_attention_block(s, l);
        // The feed-forward block reads post_attention_norm (loaded as ffn_norm).
        if (s.hp.is_moe(l))
            blocks::moe_ffn_block(s, l);
        else
            blocks::ffn_block(s, l, {});
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace cria::model::archs
