#include "model/encoder_blocks.h"

#include <cstring>

#include "cria/core/error.h"

namespace cria::model::blocks {

using ops::TensorView;

namespace {

TensorView vec_view(const std::vector<float>& v, int64_t n) {
    return TensorView::contiguous(ElementType::F32, v.data(), {n});
}

// x = LN(x) with the weight and bias (llama.cpp's LLM_NORM: ggml_norm, then
// the weight, then the bias).
void layer_norm(Step& s, const std::vector<float>& weight, const std::vector<float>& bias) {
    const TensorView x = view(s.ws.x, s.hp.n_embd, s.n);
    s.ops.layer_norm(x, weight.data(), bias.empty() ? nullptr : bias.data(), s.hp.norm_eps, x);
}

void embed_encoder(Step& s, bool positions) {
    const HParams& hp = s.hp;
    const int64_t E = hp.n_embd, n = s.n;
    embed(s, /*scale=*/false);
    const TensorView x = view(s.ws.x, E, n);
    // Token types are all 0 ("sentence A"): row 0 added to every token.
    if (!s.w.token_types.empty()) s.ops.add(x, vec_view(s.w.token_types, E), x);
    if (positions) {
        for (int64_t t = 0; t < n; ++t)
            if (s.in.positions[t] < 0 || static_cast<uint32_t>(s.in.positions[t]) >= hp.n_ctx_train)
                throw Error(hp.arch_name + ": position " + std::to_string(s.in.positions[t]) +
                            " is beyond the model's " + std::to_string(hp.n_ctx_train) + " learned positions");
        const TensorView p = view(s.ws.h, E, n);
        s.ops.get_rows(s.w.pos_embd, s.in.positions, n, p);
        s.ops.add(x, p, x);
    }
    layer_norm(s, s.w.token_embd_norm, s.w.token_embd_norm_bias);
}

// x += down(gelu(up x)) (biases as loaded), or the SwiGLU block without norms.
void encoder_ffn(Step& s, uint32_t layer, EncoderFfn kind) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    if (kind == EncoderFfn::Swiglu) {
        FfnOptions o;
        o.pre_norm = false;
        ffn_block(s, layer, o);
        return;
    }
    const TensorView x = view(s.ws.x, hp.n_embd, s.n);
    const TensorView up = view(s.ws.up, hp.n_ff, s.n);
    linear(s, lw.up, x, up);
    s.ops.gelu(up, up);
    const TensorView out = view(s.ws.o, hp.n_embd, s.n);
    linear(s, lw.down, up, out);
    s.ops.add(x, out, x);
}

}  // namespace

void encoder_forward(Step& s, float* logits, float* hidden, bool positions, EncoderFfn ffn) {
    const HParams& hp = s.hp;
    if (logits != nullptr)
        throw Error(hp.arch_name + " is an encoder: it has no output head to compute logits with "
                    "(use it for embeddings or reranking)");
    if (!s.first_stage() || !s.last_stage())
        throw Error(hp.arch_name + ": an encoder cannot be split into pipeline stages");
    embed_encoder(s, positions);
    AttentionOptions attention;
    attention.pre_norm = false;  // post-norm blocks: the projections read the stream itself
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        capture(s, l);
        attention_block(s, l, attention);  // x += Wo attention(...); both ways (the memory's micro-batch)
        layer_norm(s, s.w.layers[l].post_attn_norm, s.w.layers[l].post_attn_norm_bias);
        encoder_ffn(s, l, ffn);
        layer_norm(s, s.w.layers[l].post_ffn_norm, s.w.layers[l].post_ffn_norm_bias);
    }
    capture(s, hp.n_layer);
    if (hidden == nullptr) return;
    const int64_t E = hp.n_embd;
    for (int64_t i = 0; i < s.in.n_outputs; ++i) {
        const int32_t r = s.in.output_rows[i];
        if (r < 0 || r >= s.n) throw Error("output row " + std::to_string(r) + " is outside the micro-batch");
        std::memcpy(hidden + i * E, s.ws.x.data() + static_cast<int64_t>(r) * E, static_cast<size_t>(E) * sizeof(float));
    }
}

}  // namespace cria::model::blocks
