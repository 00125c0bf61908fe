// The EAGLE-3 draft head: loading and checking the eagle3 GGUF, and its
// encoder / one-layer decoder on the op API.

#include "cria/spec/eagle3_head.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "cria/core/error.h"
#include "cria/spec/head_inputs.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/quant/quantize.h"
#include "spec/head_file.h"

namespace cria::spec {

namespace {

using ops::TensorView;

[[noreturn]] void fail(const gguf::File& f, const std::string& what) { head_file_error(f, "eagle3", what); }

TensorView matrix(const gguf::File& f, const std::string& name, uint64_t ne0, uint64_t ne1, bool required = true) {
    return head_matrix(f, "eagle3", name, ne0, ne1, required);
}

std::vector<float> vector_f32(const gguf::File& f, const std::string& name, uint64_t n, bool required = true) {
    return head_vector(f, "eagle3", name, n, required);
}

uint32_t required_u32(const gguf::File& f, const std::string& key) { return head_u32(f, "eagle3", key); }

TensorView view(std::vector<float>& buf, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    return TensorView::contiguous(ElementType::F32, buf.data(), {ne0, ne1, ne2});
}

}  // namespace

bool Eagle3Head::is_eagle3_file(const std::string& path) {
    try {
        return gguf::File::open(path)->architecture() == "eagle3";
    } catch (const Error&) {
        return false;
    }
}

std::shared_ptr<const Eagle3Head> Eagle3Head::load(const std::string& path, const model::Model& target) {
    return from_file(std::shared_ptr<const gguf::File>(gguf::File::open(path)), target);
}

std::shared_ptr<const Eagle3Head> Eagle3Head::from_file(std::shared_ptr<const gguf::File> file,
                                                       const model::Model& target) {
    const gguf::File& f = *file;
    if (f.architecture() != "eagle3")
        fail(f, "architecture is '" + f.architecture() + "', expected 'eagle3' (--spec-type draft-eagle3)");
    auto h = std::make_shared<Eagle3Head>();
    h->file_ = file;
    const auto& thp = target.hparams();

    h->n_embd = required_u32(f, "eagle3.embedding_length");
    if (required_u32(f, "eagle3.block_count") != 1) fail(f, "block_count must be 1 (one decoder layer)");
    h->n_head = required_u32(f, "eagle3.attention.head_count");
    h->n_head_kv = f.get_u32("eagle3.attention.head_count_kv", h->n_head);
    h->n_ff = required_u32(f, "eagle3.feed_forward_length");
    if (h->n_embd == 0 || h->n_head == 0 || h->n_head_kv == 0 || h->n_ff == 0 || h->n_head % h->n_head_kv != 0)
        fail(f, "invalid sizes (embedding_length, head_count, head_count_kv, feed_forward_length)");
    h->head_dim = f.get_u32("eagle3.attention.key_length", h->n_embd / h->n_head);
    if (h->head_dim == 0 || h->head_dim % 2 != 0 || f.get_u32("eagle3.attention.value_length", h->head_dim) != h->head_dim)
        fail(f, "head size must be even and equal for keys and values");
    if (f.get_u32("eagle3.rope.dimension_count", h->head_dim) != h->head_dim)
        fail(f, "partial rotary embeddings are not supported");
    h->eps = f.get_f32("eagle3.attention.layer_norm_rms_epsilon", 1e-5f);
    h->rope_base = f.get_f32("eagle3.rope.freq_base", 10000.0f);
    const float rope_factor = f.get_f32("eagle3.rope.scaling.factor", 0.0f);
    const std::string rope_type = f.get_string("eagle3.rope.scaling.type", "none");
    if (rope_type == "linear" && rope_factor > 0.0f) h->rope_scale = 1.0f / rope_factor;
    else if (rope_type != "none" && rope_type != "linear" && rope_type != "llama3")
        fail(f, "rope scaling '" + rope_type + "' is not supported");
    h->norm_before_fc = f.get_bool("eagle3.norm_before_fc", false);
    h->norm_before_residual = f.get_bool("eagle3.norm_before_residual", false);

    // The target: hidden size and layer ids.
    h->n_embd_target = required_u32(f, "eagle3.target_hidden_size");
    if (h->n_embd_target != thp.n_embd)
        fail(f, "target_hidden_size is " + std::to_string(h->n_embd_target) + " but the target's hidden size is " +
                    std::to_string(thp.n_embd) + ": this draft was trained for another model");
    const gguf::Value* layers = f.find("eagle3.target_layers");
    if (!layers || !layers->is_array() || layers->size() != 3)
        fail(f, "eagle3.target_layers must be an array of exactly 3 layer ids");
    for (size_t i = 0; i < 3; ++i) {
        const auto id = layers->at(i).as_i64();
        if (!id || *id < 0 || *id > static_cast<int64_t>(thp.n_layer))
            fail(f, "target layer id " + (id ? std::to_string(*id) : std::string("?")) +
                        " is outside the target's layers 0.." + std::to_string(thp.n_layer));
        h->target_layers.push_back(static_cast<uint32_t>(*id));
    }

    const uint64_t d = h->n_embd, d3 = 3ull * h->n_embd_target, hd = h->head_dim;
    h->fc = matrix(f, "fc.weight", d3, d);
    if (h->norm_before_fc) h->enc_norm = vector_f32(f, "enc.output_norm.weight", d3);
    h->attn_norm = vector_f32(f, "blk.0.attn_norm.weight", d);
    h->attn_norm_2 = vector_f32(f, "blk.0.attn_norm_2.weight", d);
    h->wq = matrix(f, "blk.0.attn_q.weight", 2 * d, h->n_head * hd);
    h->wk = matrix(f, "blk.0.attn_k.weight", 2 * d, h->n_head_kv * hd);
    h->wv = matrix(f, "blk.0.attn_v.weight", 2 * d, h->n_head_kv * hd);
    h->wo = matrix(f, "blk.0.attn_output.weight", h->n_head * hd, d);
    h->ffn_norm = vector_f32(f, "blk.0.ffn_norm.weight", d);
    h->gate = matrix(f, "blk.0.ffn_gate.weight", d, h->n_ff);
    h->up = matrix(f, "blk.0.ffn_up.weight", d, h->n_ff);
    h->down = matrix(f, "blk.0.ffn_down.weight", h->n_ff, d);
    h->output_norm = vector_f32(f, "output_norm.weight", d);
    h->rope_freqs = vector_f32(f, "rope_freqs.weight", hd / 2, false);

    // Vocabulary: its own embedding / output, or the target's (same width only).
    const uint64_t n_vocab = thp.n_vocab;
    h->token_embd = matrix(f, "token_embd.weight", d, n_vocab, false);
    if (!h->token_embd.data) {
        if (thp.n_embd != d) fail(f, "has no token_embd.weight and its width differs from the target's");
        h->token_embd = target.weights().token_embd;
        if (h->token_embd.weight_packing != matmul::Packing::None)
            fail(f, "the target's token embedding is packed and cannot be borrowed");
    }
    const gguf::TensorInfo* out = f.find_tensor("output.weight");
    if (out) {
        if (out->n_dims != 2 || out->ne[0] != d || out->ne[1] == 0 || out->ne[1] > n_vocab)
            fail(f, "output.weight has shape " + head_shape_text(*out) + ", expected [" + std::to_string(d) +
                        ", n_vocab_draft <= " + std::to_string(n_vocab) + "]");
        h->output = matrix(f, "output.weight", d, out->ne[1]);
    } else {
        if (thp.n_embd != d) fail(f, "has no output.weight and its width differs from the target's");
        h->output = target.weights().output.w;
    }
    h->n_vocab_draft = h->output.ne[1];

    if (const gguf::TensorInfo* t = f.find_tensor("d2t")) {
        if (t->type != ElementType::I64 || t->n_dims != 1 || static_cast<int64_t>(t->ne[0]) != h->n_vocab_draft)
            fail(f, "d2t must be an I64 vector of " + std::to_string(h->n_vocab_draft) + " entries (output rows)");
        const auto bytes = f.tensor_data(*t);
        std::unordered_set<int64_t> seen;
        h->d2t.resize(static_cast<size_t>(h->n_vocab_draft));
        for (int64_t j = 0; j < h->n_vocab_draft; ++j) {
            int64_t id;
            std::memcpy(&id, bytes.data() + j * 8, 8);
            if (id < 0 || id >= static_cast<int64_t>(n_vocab) || !seen.insert(id).second)
                fail(f, "d2t entry " + std::to_string(j) + " = " + std::to_string(id) +
                            " is not a distinct target token id below " + std::to_string(n_vocab));
            h->d2t[static_cast<size_t>(j)] = static_cast<int32_t>(id);
        }
    } else if (h->n_vocab_draft != static_cast<int64_t>(n_vocab)) {
        fail(f, "the output has " + std::to_string(h->n_vocab_draft) + " rows but there is no d2t map");
    }
    if (const auto nv = f.get_u32("eagle3.vocab_size"); nv && *nv != n_vocab)
        fail(f, "vocab_size " + std::to_string(*nv) + " differs from the target's " + std::to_string(n_vocab));
    return h;
}

Eagle3Session::Eagle3Session(std::shared_ptr<const Eagle3Head> head, ops::Ops& ops, int32_t n_ctx, int32_t max_batch)
    : head_(std::move(head)), ops_(ops), n_ctx_(n_ctx), max_batch_(max_batch) {
    if (n_ctx <= 0 || max_batch <= 0) throw Error("eagle3 draft: the context and batch must not be empty");
    const Eagle3Head& h = *head_;
    const size_t kv = static_cast<size_t>(h.head_dim) * h.n_head_kv;
    k_cache_.assign(kv * static_cast<size_t>(n_ctx), 0);
    v_cache_.assign(kv * static_cast<size_t>(n_ctx), 0);
    const size_t b = static_cast<size_t>(max_batch), d = h.n_embd;
    normed_in_.resize(b * 3 * h.n_embd_target);
    emb_.resize(b * d);
    x_.resize(b * 2 * d);
    q_.resize(b * h.n_head * h.head_dim);
    k_.resize(b * kv);
    v_.resize(b * kv);
    attn_.resize(b * h.n_head * h.head_dim);
    r_.resize(b * d);
    n_.resize(b * d);
    gate_.resize(b * h.n_ff);
    up_.resize(b * h.n_ff);
    s_.resize(b * d);
    s_last_.resize(d);
    normed_last_.resize(d);
    logits_.resize(static_cast<size_t>(h.n_vocab_draft));
    rope_.n_dims = static_cast<int>(h.head_dim);
    rope_.order = ops::RopeOrder::Normal;  // the converter permutes q/k rows for llama.cpp's "normal" rope
    rope_.freq_base = h.rope_base;
    rope_.freq_scale = h.rope_scale;
    rope_.freq_factors = h.rope_freqs.empty() ? nullptr : h.rope_freqs.data();
}

void Eagle3Session::encode(const float* features, int64_t n, float* g) {
    const Eagle3Head& h = *head_;
    const int64_t w = 3 * static_cast<int64_t>(h.n_embd_target), d = h.n_embd;
    for (int64_t first = 0; first < n; first += max_batch_) {
        const int64_t m = std::min<int64_t>(max_batch_, n - first);
        TensorView in = TensorView::contiguous(ElementType::F32, features + first * w, {w, m});
        if (h.norm_before_fc) {
            TensorView normed = view(normed_in_, w, m);
            ops_.rms_norm(in, h.enc_norm.data(), h.eps, normed);
            in = normed;
        }
        ops_.matmul(h.fc, in, TensorView::contiguous(ElementType::F32, g + first * d, {d, m}));
    }
}

void Eagle3Session::decode(const int32_t* tokens, const float* g, const int32_t* positions, int64_t n,
                           const float* const* input_rows) {
    const Eagle3Head& h = *head_;
    if (n <= 0 || n > max_batch_) throw Error("eagle3 draft: batch of " + std::to_string(n) + " rows");
    for (int64_t i = 0; i < n; ++i)
        if (positions[i] < 0 || positions[i] >= n_ctx_ || (i > 0 && positions[i] != positions[i - 1] + 1))
            throw Error("eagle3 draft: positions must be contiguous and inside the draft context");
    const int64_t d = h.n_embd, hd = h.head_dim, nh = h.n_head, nkv = h.n_head_kv, ff = h.n_ff;

    // x = [RMSNorm(E[t]) ; RMSNorm(g)], the second half kept for the residual.
    TensorView emb = view(emb_, d, n);
    embed_head_inputs(ops_, h.token_embd, tokens, n, input_rows, emb);
    TensorView gin = TensorView::contiguous(ElementType::F32, g, {d, n});
    TensorView normed_g = view(n_, d, n);
    ops_.rms_norm(emb, h.attn_norm.data(), h.eps, emb);
    ops_.rms_norm(gin, h.attn_norm_2.data(), h.eps, normed_g);
    for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&x_[static_cast<size_t>(i * 2 * d)], &emb_[static_cast<size_t>(i * d)], d * sizeof(float));
        std::memcpy(&x_[static_cast<size_t>(i * 2 * d + d)], &n_[static_cast<size_t>(i * d)], d * sizeof(float));
    }
    TensorView x = view(x_, 2 * d, n);

    // Attention over the cache, after writing this batch's K/V at its positions.
    TensorView q = view(q_, hd, nh, n), k = view(k_, hd, nkv, n), v = view(v_, hd, nkv, n);
    ops_.matmul(h.wq, x, view(q_, nh * hd, n));
    ops_.matmul(h.wk, x, view(k_, nkv * hd, n));
    ops_.matmul(h.wv, x, view(v_, nkv * hd, n));
    ops_.rope(q, positions, rope_, q);
    ops_.rope(k, positions, rope_, k);
    const int64_t p0 = positions[0], n_kv = positions[n - 1] + 1;
    const size_t row = static_cast<size_t>(hd * nkv);
    ops_.convert(k, TensorView::contiguous(ElementType::F16, &k_cache_[row * p0], {hd, nkv, n}));
    ops_.convert(v, TensorView::contiguous(ElementType::F16, &v_cache_[row * p0], {hd, nkv, n}));
    ops::AttentionParams ap;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    ap.causal = true;
    ap.positions = positions;
    TensorView attn = view(attn_, hd, nh, n);
    ops_.attention(q, TensorView::contiguous(ElementType::F16, k_cache_.data(), {hd, nkv, n_kv}),
                   TensorView::contiguous(ElementType::F16, v_cache_.data(), {hd, nkv, n_kv}), ap, attn);
    TensorView r = view(r_, d, n);
    ops_.matmul(h.wo, view(attn_, hd * nh, n), r);
    ops_.add(r, h.norm_before_residual ? normed_g : gin, r);

    // s = r + SwiGLU(RMSNorm(r)).
    TensorView nr = view(n_, d, n);  // normed g is no longer needed
    ops_.rms_norm(r, h.ffn_norm.data(), h.eps, nr);
    TensorView ga = view(gate_, ff, n), u = view(up_, ff, n);
    ops_.matmul(h.gate, nr, ga);
    ops_.matmul(h.up, nr, u);
    ops_.swiglu(ga, u, ga);
    TensorView s = view(s_, d, n);
    ops_.matmul(h.down, ga, s);
    ops_.add(s, r, s);

    // The last row: its pre-norm output (the next row's g) and its logits.
    std::memcpy(s_last_.data(), &s_[static_cast<size_t>((n - 1) * d)], d * sizeof(float));
    TensorView last = view(s_last_, d, 1), normed = view(normed_last_, d, 1);
    ops_.rms_norm(last, h.output_norm.data(), h.eps, normed);
    ops_.matmul(h.output, normed, view(logits_, h.n_vocab_draft, 1));
}

}  // namespace cria::spec
