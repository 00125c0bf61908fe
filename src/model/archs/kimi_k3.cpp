// kimi-k3 (Kimi-K3): kimi-linear's Kimi delta attention and rope-less MLA
// layers (see kda_hybrid.h for what differs in them) with situ feed-forward
// blocks, latent experts, and attention residuals across layers
// (attn_res.block_size B > 0, llama.cpp's res_push / res_mix). With B, per
// layer l with input x:
//   a_in = mix(x, attn_res_score_l)   (the bank as it was before this layer)
//   if l % B == 0: bank x              (the raw layer input)
//   a = Mixer(rms_norm(a_in))          (KDA or MLA, without its residual add)
//   s = l % B == 0 ? a : x + a         (the stream restarts on banking layers)
//   x' = s + FFN(rms_norm(mix(s, ffn_res_score_l)))
// and before the output norm x = mix(x, output_res_score). mix(c, w): with
// nothing banked c; else the softmax over the scores
// sum_d rms_norm(v)[d] w[d] (no weight in the norm) of the banked vectors
// and c, then the weighted sum of the raw vectors.

#include <cmath>
#include <cstring>
#include <vector>

#include "cria/core/error.h"

#include "model/archs/kda_hybrid.h"
#include "model/blocks.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

constexpr KdaHybridOptions kOptions{/*bailing=*/false, /*kimi_k3=*/true};

void read_hparams(const HParamsKeys& keys, HParams& hp) { read_kda_hybrid_hparams(keys, hp, kOptions); }

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) { declare_kda_hybrid_tensors(hp, t, w, kOptions); }

// out = mix(cur, w) over the n tokens, `banked` vectors of E values per
// token in `bank` (bank j at bank + j * E * n); out may be cur.
void residual_mix(const float* bank, int64_t banked, const float* cur, const std::vector<float>& w, float eps,
                  int64_t E, int64_t n, float* out) {
    if (banked == 0) {
        if (out != cur) std::memcpy(out, cur, static_cast<size_t>(E * n) * sizeof(float));
        return;
    }
    std::vector<float> p(static_cast<size_t>(banked + 1));
    std::vector<float> mixed(static_cast<size_t>(E));
    for (int64_t t = 0; t < n; ++t) {
        const auto vec = [&](int64_t j) { return j < banked ? bank + (j * n + t) * E : cur + t * E; };
        float max = -INFINITY;
        for (int64_t j = 0; j <= banked; ++j) {
            const float* v = vec(j);
            double ss = 0, dot = 0;
            for (int64_t d = 0; d < E; ++d) {
                ss += double{v[d]} * v[d];
                dot += double{v[d]} * w[static_cast<size_t>(d)];
            }
            const auto score = static_cast<float>(dot / std::sqrt(ss / static_cast<double>(E) + eps));
            p[static_cast<size_t>(j)] = score;
            max = std::max(max, score);
        }
        float sum = 0;
        for (float& x : p) sum += x = std::exp(x - max);
        std::fill(mixed.begin(), mixed.end(), 0.0f);
        for (int64_t j = 0; j <= banked; ++j) {
            const float pj = p[static_cast<size_t>(j)] / sum;
            const float* v = vec(j);
            for (int64_t d = 0; d < E; ++d) mixed[static_cast<size_t>(d)] += pj * v[d];
        }
        std::memcpy(out + t * E, mixed.data(), static_cast<size_t>(E) * sizeof(float));
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    const HParams& hp = s.hp;
    if (hp.attn_res_block_size == 0) {
        kda_hybrid_forward(s, logits, hidden);
        return;
    }
    // The banked layer inputs of the attention residuals live in this
    // process: a pipeline stage would need them from the earlier stages.
    if (!s.first_stage() || !s.last_stage())
        throw Error("kimi-k3's attention residuals mix layer inputs across the whole stack: it cannot be split "
                    "over pipeline stages (run it in one process)");
    const int64_t E = hp.n_embd, n = s.n, En = E * n;
    const float eps = hp.norm_rms_eps;
    Workspace& ws = s.ws;
    float* x = ws.x.data();
    float* layer_in = ws.attn_res.data();  // the layer's input x
    float* stream = layer_in + En;         // s, the stream after the mixer
    float* bank = stream + En;             // the banked layer inputs
    int64_t banked = 0;
    const size_t bytes = static_cast<size_t>(En) * sizeof(float);

    blocks::embed(s, /*scale=*/false);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        blocks::capture(s, l);
        const LayerWeights& lw = s.w.layers[l];
        const bool banking = l % hp.attn_res_block_size == 0;
        std::memcpy(layer_in, x, bytes);
        residual_mix(bank, banked, layer_in, lw.attn_res_score, eps, E, n, x);
        if (banking) std::memcpy(bank + banked++ * En, layer_in, bytes);
        // The blocks add their output to ws.x and leave it alone in ws.o.
        if (hp.is_kda(l))
            blocks::kda_block(s, l);
        else
            blocks::mla_attention_block(s, l);
        const float* a = ws.o.data();
        for (int64_t i = 0; i < En; ++i) stream[i] = banking ? a[i] : layer_in[i] + a[i];
        residual_mix(bank, banked, stream, lw.ffn_res_score, eps, E, n, x);
        if (hp.is_moe(l))
            blocks::moe_ffn_block(s, l);
        else
            blocks::ffn_block(s, l, {});
        const float* f = ws.o.data();
        for (int64_t i = 0; i < En; ++i) x[i] = stream[i] + f[i];
    }
    blocks::capture(s, hp.n_layer);
    std::memcpy(layer_in, x, bytes);
    residual_mix(bank, banked, layer_in, s.w.output_res_score, eps, E, n, x);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kKimiK3{"kimi-k3", read_hparams, declare_tensors, forward, reference::kda_hybrid,
                                    /*supports_experts=*/true, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
