// The DFlash block drafter's network: loading and checking the dflash GGUF,
// the feature encoder with K/V injection, and the non-causal block decoder.

#include "cria/spec/dflash_head.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "spec/head_file.h"

namespace cria::spec {

namespace {

using ops::TensorView;
constexpr const char* kArch = "dflash";

[[noreturn]] void fail(const gguf::File& f, const std::string& what) { head_file_error(f, kArch, what); }

TensorView view(std::vector<float>& buf, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    return TensorView::contiguous(ElementType::F32, buf.data(), {ne0, ne1, ne2});
}

}  // namespace

bool DflashHead::is_dflash_file(const std::string& path) {
    try {
        return gguf::File::open(path)->architecture() == kArch;
    } catch (const Error&) {
        return false;
    }
}

bool DflashHead::is_dspark_file(const std::string& path) {
    try {
        const auto f = gguf::File::open(path);
        return f->architecture() == kArch && f->find_tensor("markov_w1.weight") != nullptr;
    } catch (const Error&) {
        return false;
    }
}

std::shared_ptr<const DflashHead> DflashHead::load(const std::string& path, const model::Model& target) {
    std::shared_ptr<const gguf::File> file(gguf::File::open(path));
    const gguf::File& f = *file;
    if (f.architecture() != kArch) fail(f, "architecture is '" + f.architecture() + "', expected 'dflash'");
    if (f.find("dflash.attention.sliding_window"))
        fail(f, "sliding-window DFlash layers are not supported yet");
    auto h = std::make_shared<DflashHead>();
    h->file_ = file;
    const auto& thp = target.hparams();
    h->n_embd = head_u32(f, kArch, "dflash.embedding_length");
    h->n_layer = head_u32(f, kArch, "dflash.block_count");
    h->n_head = head_u32(f, kArch, "dflash.attention.head_count");
    h->n_head_kv = f.get_u32("dflash.attention.head_count_kv", h->n_head);
    h->n_ff = head_u32(f, kArch, "dflash.feed_forward_length");
    if (h->n_embd == 0 || h->n_layer == 0 || h->n_layer > 64 || h->n_head == 0 || h->n_head_kv == 0 ||
        h->n_ff == 0 || h->n_head % h->n_head_kv != 0)
        fail(f, "invalid sizes (embedding_length, block_count, head_count, head_count_kv, feed_forward_length)");
    h->head_dim = f.get_u32("dflash.attention.key_length", h->n_embd / h->n_head);
    if (h->head_dim == 0 || h->head_dim % 2 != 0 || f.get_u32("dflash.attention.value_length", h->head_dim) != h->head_dim)
        fail(f, "head size must be even and equal for keys and values");
    if (f.get_u32("dflash.rope.dimension_count", h->head_dim) != h->head_dim)
        fail(f, "partial rotary embeddings are not supported");
    if (f.get_string("dflash.rope.scaling.type", "none") != "none") fail(f, "rope scaling is not supported");
    h->eps = f.get_f32("dflash.attention.layer_norm_rms_epsilon", 1e-6f);
    h->rope_base = f.get_f32("dflash.rope.freq_base", 10000.0f);
    h->block_size = f.get_u32("dflash.block_size", 16);
    if (h->block_size < 2 || h->block_size > 256) fail(f, "block_size must be in [2, 256]");
    const auto mask = f.get_u32("tokenizer.ggml.mask_token_id");
    if (!mask || *mask >= thp.n_vocab) fail(f, "tokenizer.ggml.mask_token_id is missing or outside the vocabulary");
    h->mask_token = static_cast<int32_t>(*mask);

    if (h->n_embd != thp.n_embd)
        fail(f, "embedding_length is " + std::to_string(h->n_embd) + " but the target's hidden size is " +
                    std::to_string(thp.n_embd) + ": this draft was trained for another model");
    const gguf::Value* layers = f.find("dflash.target_layers");
    if (!layers || !layers->is_array() || layers->size() == 0 || layers->size() > 64)
        fail(f, "dflash.target_layers must be a non-empty array of layer ids");
    for (size_t i = 0; i < layers->size(); ++i) {
        const auto id = layers->at(i).as_i64();
        if (!id || *id < 0 || *id > static_cast<int64_t>(thp.n_layer))
            fail(f, "target layer id " + (id ? std::to_string(*id) : std::string("?")) +
                        " is outside the target's layers 0.." + std::to_string(thp.n_layer));
        h->target_layers.push_back(static_cast<uint32_t>(*id));
    }

    const uint64_t d = h->n_embd, hd = h->head_dim, k = h->target_layers.size();
    h->fc = head_matrix(f, kArch, "fc.weight", k * d, d);
    if (const auto s = head_vector(f, kArch, "fc.scale", 1, false); !s.empty()) h->fc_scale = s[0];
    h->enc_norm = head_vector(f, kArch, "enc.output_norm.weight", d);
    h->output_norm = head_vector(f, kArch, "output_norm.weight", d);
    for (uint32_t i = 0; i < h->n_layer; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        Layer l;
        l.attn_norm = head_vector(f, kArch, b + "attn_norm.weight", d);
        l.q_norm = head_vector(f, kArch, b + "attn_q_norm.weight", hd);
        l.k_norm = head_vector(f, kArch, b + "attn_k_norm.weight", hd);
        l.ffn_norm = head_vector(f, kArch, b + "ffn_norm.weight", d);
        l.wq = head_matrix(f, kArch, b + "attn_q.weight", d, h->n_head * hd);
        l.wk = head_matrix(f, kArch, b + "attn_k.weight", d, h->n_head_kv * hd);
        l.wv = head_matrix(f, kArch, b + "attn_v.weight", d, h->n_head_kv * hd);
        l.wo = head_matrix(f, kArch, b + "attn_output.weight", h->n_head * hd, d);
        l.gate = head_matrix(f, kArch, b + "ffn_gate.weight", d, h->n_ff);
        l.up = head_matrix(f, kArch, b + "ffn_up.weight", d, h->n_ff);
        l.down = head_matrix(f, kArch, b + "ffn_down.weight", h->n_ff, d);
        h->layers.push_back(std::move(l));
    }

    const uint64_t n_vocab = thp.n_vocab;
    h->token_embd = head_matrix(f, kArch, "token_embd.weight", d, n_vocab, false);
    if (!h->token_embd.data) {
        h->token_embd = target.weights().token_embd;
        if (h->token_embd.weight_packing != matmul::Packing::None)
            fail(f, "the target's token embedding is packed and cannot be borrowed");
    }
    if (const gguf::TensorInfo* out = f.find_tensor("output.weight")) {
        if (out->n_dims != 2 || out->ne[0] != d || out->ne[1] == 0 || out->ne[1] > n_vocab)
            fail(f, "output.weight has shape " + head_shape_text(*out) + ", expected [" + std::to_string(d) +
                        ", n_vocab_draft <= " + std::to_string(n_vocab) + "]");
        h->output = head_matrix(f, kArch, "output.weight", d, out->ne[1]);
    } else {
        h->output = target.weights().output.w;
    }
    h->n_vocab_draft = h->output.ne[1];
    if (const gguf::TensorInfo* t = f.find_tensor("d2t")) {
        if (t->type != ElementType::I64 || t->n_dims != 1 || static_cast<int64_t>(t->ne[0]) != h->n_vocab_draft)
            fail(f, "d2t must be an I64 vector of " + std::to_string(h->n_vocab_draft) + " entries (output rows)");
        const auto bytes = f.tensor_data(*t);
        std::unordered_set<int64_t> seen;
        for (int64_t j = 0; j < h->n_vocab_draft; ++j) {
            int64_t id;
            std::memcpy(&id, bytes.data() + j * 8, 8);
            if (id < 0 || id >= static_cast<int64_t>(n_vocab) || !seen.insert(id).second)
                fail(f, "d2t entry " + std::to_string(j) + " = " + std::to_string(id) +
                            " is not a distinct target token id below " + std::to_string(n_vocab));
            h->d2t.push_back(static_cast<int32_t>(id));
        }
    } else if (h->n_vocab_draft != static_cast<int64_t>(n_vocab)) {
        fail(f, "the output has " + std::to_string(h->n_vocab_draft) + " rows but there is no d2t map");
    }
    h->dspark = DsparkHeads::load(f, d, n_vocab, h->n_vocab_draft);
    return h;
}

DflashSession::DflashSession(std::shared_ptr<const DflashHead> head, ops::Ops& ops, int32_t n_ctx, int32_t max_batch)
    : head_(std::move(head)), ops_(ops), n_ctx_(n_ctx), max_batch_(max_batch) {
    if (n_ctx <= 0 || max_batch <= 0) throw Error("dflash draft: the context and batch must not be empty");
    const DflashHead& h = *head_;
    const size_t kv = static_cast<size_t>(h.head_dim) * h.n_head_kv, b = static_cast<size_t>(max_batch);
    k_cache_.assign(h.n_layer, std::vector<uint16_t>(kv * static_cast<size_t>(n_ctx), 0));
    v_cache_.assign(h.n_layer, std::vector<uint16_t>(kv * static_cast<size_t>(n_ctx), 0));
    g_.resize(b * h.n_embd);
    x_.resize(b * h.n_embd);
    n_.resize(b * h.n_embd);
    o_.resize(b * h.n_embd);
    q_.resize(b * h.n_head * h.head_dim);
    attn_.resize(b * h.n_head * h.head_dim);
    k_.resize(b * kv);
    v_.resize(b * kv);
    gate_.resize(b * h.n_ff);
    up_.resize(b * h.n_ff);
    logits_.resize(b * static_cast<size_t>(h.n_vocab_draft));
    pos_.resize(b);
    rope_.n_dims = static_cast<int>(h.head_dim);
    rope_.order = ops::RopeOrder::NeoX;  // Qwen3 backbone, weights not permuted
    rope_.freq_base = h.rope_base;
}

void DflashSession::write_kv(size_t layer, const TensorView& k, const TensorView& v, int32_t p0, int64_t n) {
    const DflashHead& h = *head_;
    const int64_t hd = h.head_dim, nkv = h.n_head_kv;
    const size_t row = static_cast<size_t>(hd * nkv);
    ops_.convert(k, TensorView::contiguous(ElementType::F16, &k_cache_[layer][row * static_cast<size_t>(p0)], {hd, nkv, n}));
    ops_.convert(v, TensorView::contiguous(ElementType::F16, &v_cache_[layer][row * static_cast<size_t>(p0)], {hd, nkv, n}));
}

void DflashSession::inject(const float* features, int64_t n, int32_t p0) {
    const DflashHead& h = *head_;
    const int64_t d = h.n_embd, w = static_cast<int64_t>(h.target_layers.size()) * d, hd = h.head_dim,
                  nkv = h.n_head_kv;
    if (p0 < 0 || p0 + n > n_ctx_) throw Error("dflash draft: positions outside the draft context");
    for (int64_t first = 0; first < n; first += max_batch_) {
        const int64_t m = std::min<int64_t>(max_batch_, n - first);
        const auto p = static_cast<int32_t>(p0 + first);
        for (int64_t i = 0; i < m; ++i) pos_[static_cast<size_t>(i)] = p + static_cast<int32_t>(i);
        TensorView g = view(g_, d, m);
        ops_.matmul(h.fc, TensorView::contiguous(ElementType::F32, features + first * w, {w, m}), g);
        if (h.fc_scale != 1.0f) ops_.scale(g, h.fc_scale, g);
        ops_.rms_norm(g, h.enc_norm.data(), h.eps, g);
        for (size_t li = 0; li < h.layers.size(); ++li) {
            const auto& l = h.layers[li];
            TensorView k = view(k_, hd, nkv, m), v = view(v_, hd, nkv, m);
            ops_.matmul(l.wk, g, view(k_, hd * nkv, m));
            ops_.matmul(l.wv, g, view(v_, hd * nkv, m));
            ops_.rms_norm(view(k_, hd, nkv * m), l.k_norm.data(), h.eps, view(k_, hd, nkv * m));
            ops_.rope(k, pos_.data(), rope_, k);
            write_kv(li, k, v, p, m);
        }
    }
}

void DflashSession::block(const int32_t* tokens, int64_t n, int32_t p0) {
    const DflashHead& h = *head_;
    if (n <= 0 || n > max_batch_ || p0 < 0 || p0 + n > n_ctx_)
        throw Error("dflash draft: a block of " + std::to_string(n) + " rows does not fit the draft context");
    const int64_t d = h.n_embd, hd = h.head_dim, nh = h.n_head, nkv = h.n_head_kv, ff = h.n_ff;
    for (int64_t i = 0; i < n; ++i) pos_[static_cast<size_t>(i)] = p0 + static_cast<int32_t>(i);
    TensorView x = view(x_, d, n), nx = view(n_, d, n), o = view(o_, d, n);
    ops_.get_rows(h.token_embd, tokens, n, x);
    ops::AttentionParams ap;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    ap.causal = false;  // the block sees the context and itself both ways
    for (size_t li = 0; li < h.layers.size(); ++li) {
        const auto& l = h.layers[li];
        ops_.rms_norm(x, l.attn_norm.data(), h.eps, nx);
        TensorView q = view(q_, hd, nh, n), k = view(k_, hd, nkv, n), v = view(v_, hd, nkv, n);
        ops_.matmul(l.wq, nx, view(q_, hd * nh, n));
        ops_.matmul(l.wk, nx, view(k_, hd * nkv, n));
        ops_.matmul(l.wv, nx, view(v_, hd * nkv, n));
        ops_.rms_norm(view(q_, hd, nh * n), l.q_norm.data(), h.eps, view(q_, hd, nh * n));
        ops_.rms_norm(view(k_, hd, nkv * n), l.k_norm.data(), h.eps, view(k_, hd, nkv * n));
        ops_.rope(q, pos_.data(), rope_, q);
        ops_.rope(k, pos_.data(), rope_, k);
        write_kv(li, k, v, p0, n);
        const int64_t n_kv = p0 + n;
        TensorView attn = view(attn_, hd, nh, n);
        ops_.attention(q, TensorView::contiguous(ElementType::F16, k_cache_[li].data(), {hd, nkv, n_kv}),
                       TensorView::contiguous(ElementType::F16, v_cache_[li].data(), {hd, nkv, n_kv}), ap, attn);
        ops_.matmul(l.wo, view(attn_, hd * nh, n), o);
        ops_.add(x, o, x);
        ops_.rms_norm(x, l.ffn_norm.data(), h.eps, nx);
        TensorView ga = view(gate_, ff, n), u = view(up_, ff, n);
        ops_.matmul(l.gate, nx, ga);
        ops_.matmul(l.up, nx, u);
        ops_.swiglu(ga, u, ga);
        ops_.matmul(l.down, ga, o);
        ops_.add(x, o, x);
    }
    ops_.rms_norm(x, h.output_norm.data(), h.eps, nx);
    ops_.matmul(h.output, nx, view(logits_, h.n_vocab_draft, n));
}

}  // namespace cria::spec
