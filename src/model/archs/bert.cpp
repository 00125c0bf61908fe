// bert and nomic-bert: non-causal encoders (embedding and reranking models).
// The token embeddings plus row 0 of token_types (every token is "sentence
// A", as llama.cpp hard-codes it), plus learned absolute positions
// (position_embd, bert only), then a LayerNorm with bias (token_embd_norm).
// Per layer, post-norm: x = LN(x + Wo attention(q, k, v)) (attn_output_norm),
// then x = LN(x + ffn(x)) (layer_output_norm), attention both ways over the
// sequence. bert: Q/K/V (or attn_qkv) with biases, no rope, a GELU
// feed-forward up -> gelu -> down with biases. nomic-bert: fused attn_qkv,
// NeoX rope, a SwiGLU feed-forward (ffn_up, ffn_gate, ffn_down) whose biases
// llama.cpp's graph does not apply. No output head: the model's output is the
// final hidden state of every token (pooled by the context); bert's
// classifier head cls / cls.output serves rank pooling (rerankers).
//
// Files with experts (nomic-bert-moe), attention Q/K norms (jina) or ALiBi
// are other architectures and are not accepted here.

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "model/arch.h"
#include "model/encoder_blocks.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

// llama.cpp's pooling types (LLAMA_POOLING_TYPE_*): unspecified .. rank.
constexpr int32_t kPoolingUnspecified = -1, kPoolingRank = 4;

void read_encoder_hparams(const HParamsKeys& keys, HParams& hp, bool rope) {
    if (!keys.has("attention.layer_norm_epsilon"))
        keys.fail("missing required key '" + keys.key("attention.layer_norm_epsilon") + "'");
    hp.norm_eps = keys.f32("attention.layer_norm_epsilon", 1e-12f);
    if (!(hp.norm_eps > 0.0f)) keys.fail("'" + keys.key("attention.layer_norm_epsilon") + "' must be positive");
    // llama.cpp reads attention.causal as a required key for both families.
    if (!keys.has("attention.causal"))
        keys.fail("missing required key '" + keys.key("attention.causal") + "' (llama.cpp refuses such a file too)");
    if (keys.boolean("attention.causal", false))
        keys.fail("a causal " + hp.arch_name + " (attention.causal = true) is not supported");
    if (hp.head_dim_v != hp.head_dim)
        keys.fail(hp.arch_name + " needs keys and values of one width (key_length " + std::to_string(hp.head_dim) +
                  ", value_length " + std::to_string(hp.head_dim_v) + ")");
    hp.causal_attn = false;
    hp.is_encoder = true;
    // bert's pooling_type is optional (llama.cpp's default then: none), nomic-bert's required.
    if (rope && !keys.has("pooling_type"))
        keys.fail("missing required key '" + keys.key("pooling_type") + "' (llama.cpp requires it for " + hp.arch_name + ")");
    const auto pooling = keys.u32("pooling_type");
    hp.pooling_type = pooling ? static_cast<int32_t>(*pooling) : kPoolingUnspecified;
    if (hp.pooling_type > kPoolingRank)
        keys.fail("'" + keys.key("pooling_type") + "' = " + std::to_string(hp.pooling_type) + " is not a pooling type (0..4)");
    const auto types = keys.file().get_u32("tokenizer.ggml.token_type_count");
    hp.n_token_types = types.value_or(0);
    if (hp.n_token_types == 0)
        keys.fail(hp.arch_name + " needs tokenizer.ggml.token_type_count (the rows of token_types), as llama.cpp does");
    if (const gguf::Value* labels = keys.file().find(keys.key("classifier.output_labels")); labels && labels->is_array())
        hp.n_cls_out = static_cast<uint32_t>(labels->size());
    if (hp.n_cls_out == 0) keys.fail("'" + keys.key("classifier.output_labels") + "' is empty");
    hp.rope_order = RopeOrder::NeoX;
    if (!rope) hp.nope_layers.assign(hp.n_layer, true);
}

void read_bert(const HParamsKeys& keys, HParams& hp) { read_encoder_hparams(keys, hp, /*rope=*/false); }
void read_nomic_bert(const HParamsKeys& keys, HParams& hp) { read_encoder_hparams(keys, hp, /*rope=*/true); }

// The tensors both families share: embeddings and their norm, attention
// (Q/K/V or the fused attn_qkv, biases optional), the output projection and
// the two post norms with their biases.
void declare_common(const HParams& hp, TensorTable& t, Weights& w, bool fused_only) {
    const uint64_t E = hp.n_embd;
    t.lookup_matrix("token_embd.weight", E, hp.n_vocab, &w.token_embd);
    t.values("token_types.weight", {E, hp.n_token_types}, &w.token_types, Need::Optional);
    t.vector("token_embd_norm.weight", E, &w.token_embd_norm);
    t.vector("token_embd_norm.bias", E, &w.token_embd_norm_bias);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        if (hp.fused_qkv) {
            t.linear(name("attn_qkv"), E, hp.n_embd_q() + hp.n_embd_k() + hp.n_embd_v(), &lw.wqkv);
        } else {
            if (fused_only) throw Error(hp.arch_name + ": blk." + std::to_string(l) + ".attn_qkv.weight is missing");
            t.linear(name("attn_q"), E, hp.n_embd_q(), &lw.wq);
            t.linear(name("attn_k"), E, hp.n_embd_k(), &lw.wk);
            t.linear(name("attn_v"), E, hp.n_embd_v(), &lw.wv);
            t.join({&lw.wq, &lw.wk, &lw.wv}, &lw.wqkv);
        }
        t.linear(name("attn_output"), hp.n_embd_q(), E, &lw.wo);
        t.vector(name("attn_output_norm.weight"), E, &lw.post_attn_norm);
        t.vector(name("attn_output_norm.bias"), E, &lw.post_attn_norm_bias);
        t.vector(name("layer_output_norm.weight"), E, &lw.post_ffn_norm);
        t.vector(name("layer_output_norm.bias"), E, &lw.post_ffn_norm_bias);
    }
}

void declare_bert(const HParams& hp, TensorTable& t, Weights& w) {
    const uint64_t E = hp.n_embd, F = hp.n_ff;
    declare_common(hp, t, w, /*fused_only=*/false);
    t.lookup_matrix("position_embd.weight", E, hp.n_ctx_train, &w.pos_embd);
    // The classifier head (rerankers); `.scale` tensors are not part of it in llama.cpp.
    t.linear("cls", E, E, &w.cls, Need::Optional, ScaleUse::Ignored);
    t.linear("cls.output", E, hp.n_cls_out, &w.cls_out, Need::Optional, ScaleUse::Ignored);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        // build_ffn with LLM_FFN_GELU, LLM_FFN_SEQ: up (+ bias), gelu, down (+ bias).
        t.linear(layer_tensor(l, "ffn_up"), E, F, &lw.up, Need::Required, ScaleUse::Ignored);
        t.linear(layer_tensor(l, "ffn_down"), F, E, &lw.down, Need::Required, ScaleUse::Ignored);
    }
}

void declare_nomic_bert(const HParams& hp, TensorTable& t, Weights& w) {
    const uint64_t E = hp.n_embd, F = hp.n_ff;
    declare_common(hp, t, w, /*fused_only=*/true);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        // llama.cpp loads the biases but its SwiGLU build_ffn passes none.
        t.linear(name("ffn_gate"), E, F, &lw.gate, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.linear(name("ffn_up"), E, F, &lw.up, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.join({&lw.gate, &lw.up}, &lw.gate_up);
        t.linear(name("ffn_down"), F, E, &lw.down, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
    }
}

void forward_bert(blocks::Step& s, float* logits, float* hidden) {
    blocks::encoder_forward(s, logits, hidden, /*positions=*/true, blocks::EncoderFfn::Gelu);
}

void forward_nomic_bert(blocks::Step& s, float* logits, float* hidden) {
    blocks::encoder_forward(s, logits, hidden, /*positions=*/false, blocks::EncoderFfn::Swiglu);
}

}  // namespace

extern const ArchDefinition kBert{"bert", read_bert, declare_bert, forward_bert, reference::bert};
extern const ArchDefinition kNomicBert{"nomic-bert", read_nomic_bert, declare_nomic_bert, forward_nomic_bert,
                                       reference::bert};

}  // namespace cria::model::archs
