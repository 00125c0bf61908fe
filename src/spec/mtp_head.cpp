// The NextN (MTP) block: loading it from a GGUF with checks, and running it
// over its own KV cache.

#include "cria/spec/mtp_head.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cria/core/error.h"
#include "cria/spec/head_inputs.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "spec/head_file.h"

namespace cria::spec {

namespace {

using ops::TensorView;
constexpr const char* kLabel = "mtp";

[[noreturn]] void fail(const gguf::File& f, const std::string& what) { head_file_error(f, kLabel, what); }

TensorView view(std::vector<float>& buf, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    return TensorView::contiguous(ElementType::F32, buf.data(), {ne0, ne1, ne2});
}

// The first block index N with blk.N.nextn.eh_proj.weight, or -1.
int64_t first_nextn_block(const gguf::File& f) {
    int64_t first = -1;
    for (const auto& t : f.tensors()) {
        const std::string& n = t.name;
        if (n.rfind("blk.", 0) != 0) continue;
        const size_t dot = n.find('.', 4);
        if (dot == std::string::npos || n.compare(dot, std::string::npos, ".nextn.eh_proj.weight") != 0) continue;
        try {
            const int64_t b = std::stoll(n.substr(4, dot - 4));
            if (first < 0 || b < first) first = b;
        } catch (const std::exception&) {
        }
    }
    return first;
}

}  // namespace

bool MtpHead::has_nextn(const std::string& path) {
    try {
        return first_nextn_block(*gguf::File::open(path)) >= 0;
    } catch (const Error&) {
        return false;
    }
}

std::shared_ptr<const MtpHead> MtpHead::load(const std::string& path, const model::Model& target) {
    std::shared_ptr<const gguf::File> file(gguf::File::open(path));
    const gguf::File& f = *file;
    const auto& thp = target.hparams();
    const std::string arch = f.architecture();
    if (arch != thp.arch_name)
        fail(f, "architecture is '" + arch + "' but the target's is '" + thp.arch_name + "'");
    if (arch != "mimo2")
        fail(f, "NextN blocks of '" + arch + "' are not supported yet (draft-mtp runs mimo2's)");
    const auto blocks = f.get_u32(arch + ".block_count");
    const uint32_t nextn = f.get_u32(arch + ".nextn_predict_layers", 0);
    if (!blocks || nextn == 0 || nextn >= *blocks)
        fail(f, "no NextN block: " + arch + ".nextn_predict_layers must be in [1, block_count)");
    if (nextn > 1)
        fail(f, std::to_string(nextn) + " NextN blocks: chained multi-head MTP is not supported yet");
    auto h = std::make_shared<MtpHead>();
    h->file_ = file;
    h->block = *blocks - nextn;
    if (h->block != thp.n_layer)
        fail(f, "the NextN block is block " + std::to_string(h->block) + " but the target has " +
                    std::to_string(thp.n_layer) + " layers: this MTP file was made for another model");
    if (f.get_u32(arch + ".embedding_length", 0) != thp.n_embd)
        fail(f, "embedding_length differs from the target's hidden size " + std::to_string(thp.n_embd));
    if (first_nextn_block(f) != static_cast<int64_t>(h->block))
        fail(f, "missing tensor 'blk." + std::to_string(h->block) + ".nextn.eh_proj.weight'");
    h->n_embd = thp.n_embd;
    h->n_head = thp.n_head;
    h->n_head_kv = thp.n_head_kv;
    h->head_dim = thp.head_dim;
    h->n_ff = thp.n_ff;
    h->eps = thp.norm_rms_eps;
    h->n_vocab = thp.n_vocab;
    if (thp.head_dim_v != thp.head_dim || thp.n_rot != thp.head_dim)
        fail(f, "the NextN block needs equal key and value head widths and full rotary embeddings");
    // Its sliding-window flag is the pattern's entry for this block.
    bool swa = false;
    if (const gguf::Value* p = f.find(arch + ".attention.sliding_window_pattern")) {
        if (p->is_array()) {
            if (p->size() != *blocks) fail(f, "sliding_window_pattern must have one flag per block");
            const gguf::Value e = p->at(h->block);
            if (const auto b = e.as_bool()) swa = *b;
            else if (const auto x = e.as_i64()) swa = *x != 0;
            else fail(f, "sliding_window_pattern must hold booleans or integers");
        } else {
            swa = f.get_u32(arch + ".attention.sliding_window_pattern", 0) != 0;
        }
    }
    h->window = swa ? f.get_u32(arch + ".attention.sliding_window", 0) : 0;
    h->rope_base = swa ? thp.rope_freq_base_swa : thp.rope_freq_base;
    h->rope_scale = swa ? thp.rope_freq_scale_swa : thp.rope_freq_scale;

    const std::string b = "blk." + std::to_string(h->block) + ".";
    for (const char* base : {"nextn.eh_proj", "attn_qkv", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate",
                             "ffn_up", "ffn_down", "nextn.shared_head_head"})
        for (const char* extra : {".scale", ".input_scale", ".bias"})
            if (f.find_tensor(b + base + extra))
                fail(f, "tensor '" + b + base + extra + "' (scales and biases in the NextN block) is not supported");
    if (f.find_tensor(b + "ffn_gate_inp.weight")) fail(f, "a mixture-of-experts NextN block is not supported");
    const uint64_t d = h->n_embd, hd = h->head_dim, q = h->n_head * hd, kv = h->n_head_kv * hd;
    h->eh_proj = head_matrix(f, kLabel, b + "nextn.eh_proj.weight", 2 * d, d);
    h->enorm = head_vector(f, kLabel, b + "nextn.enorm.weight", d);
    h->hnorm = head_vector(f, kLabel, b + "nextn.hnorm.weight", d);
    h->attn_norm = head_vector(f, kLabel, b + "attn_norm.weight", d);
    h->ffn_norm = head_vector(f, kLabel, b + "ffn_norm.weight", d);
    if (f.find_tensor(b + "attn_qkv.weight")) {
        h->wqkv = head_matrix(f, kLabel, b + "attn_qkv.weight", d, q + 2 * kv);
    } else {
        h->wq = head_matrix(f, kLabel, b + "attn_q.weight", d, q);
        h->wk = head_matrix(f, kLabel, b + "attn_k.weight", d, kv);
        h->wv = head_matrix(f, kLabel, b + "attn_v.weight", d, kv);
    }
    h->wo = head_matrix(f, kLabel, b + "attn_output.weight", q, d);
    h->sinks = head_vector(f, kLabel, b + "attn_sinks.weight", h->n_head, false);
    h->gate = head_matrix(f, kLabel, b + "ffn_gate.weight", d, h->n_ff);
    h->up = head_matrix(f, kLabel, b + "ffn_up.weight", d, h->n_ff);
    h->down = head_matrix(f, kLabel, b + "ffn_down.weight", h->n_ff, d);

    // Norm and head fall back to the trunk's, as llama.cpp's graph_mtp.
    h->head_norm = head_vector(f, kLabel, b + "nextn.shared_head_norm.weight", d, false);
    if (h->head_norm.empty()) h->head_norm = head_vector(f, kLabel, b + "layer_output_norm.weight", d, false);
    if (h->head_norm.empty()) h->head_norm = target.weights().output_norm;
    h->head = head_matrix(f, kLabel, b + "nextn.shared_head_head.weight", d, thp.n_vocab, false);
    if (!h->head.data) h->head = target.weights().output.w;
    h->token_embd = head_matrix(f, kLabel, b + "nextn.embed_tokens.weight", d, thp.n_vocab, false);
    if (!h->token_embd.data) {
        h->token_embd = target.weights().token_embd;
        if (h->token_embd.weight_packing != matmul::Packing::None)
            fail(f, "the target's token embedding is packed and cannot be borrowed");
    }
    return h;
}

MtpSession::MtpSession(std::shared_ptr<const MtpHead> head, ops::Ops& ops, int32_t n_ctx, int32_t max_batch)
    : head_(std::move(head)), ops_(ops), n_ctx_(n_ctx), max_batch_(max_batch) {
    if (n_ctx <= 0 || max_batch <= 0) throw Error("mtp draft: the context and batch must not be empty");
    const MtpHead& h = *head_;
    const size_t kv = static_cast<size_t>(h.head_dim) * h.n_head_kv, q = static_cast<size_t>(h.head_dim) * h.n_head,
                 b = static_cast<size_t>(max_batch), d = h.n_embd;
    k_cache_.assign(kv * static_cast<size_t>(n_ctx), 0);
    v_cache_.assign(kv * static_cast<size_t>(n_ctx), 0);
    e_.resize(b * d);
    hn_.resize(b * d);
    cat_.resize(b * 2 * d);
    u_.resize(b * d);
    n_.resize(b * d);
    qkv_.resize(b * (q + 2 * kv));
    q_.resize(b * q);
    k_.resize(b * kv);
    v_.resize(b * kv);
    attn_.resize(b * q);
    o_.resize(b * d);
    gate_.resize(b * h.n_ff);
    up_.resize(b * h.n_ff);
    h_last_.resize(d);
    normed_.resize(d);
    logits_.resize(static_cast<size_t>(h.n_vocab));
    pos_.resize(b);
    rope_.n_dims = static_cast<int>(h.head_dim);
    rope_.order = ops::RopeOrder::NeoX;
    rope_.freq_base = h.rope_base;
    rope_.freq_scale = h.rope_scale;
}

void MtpSession::decode(const int32_t* tokens, const float* hrows, int32_t p0, int64_t n, bool logits,
                        const float* const* input_rows) {
    const MtpHead& h = *head_;
    if (n <= 0 || n > max_batch_ || p0 < 0 || p0 + n > n_ctx_)
        throw Error("mtp draft: " + std::to_string(n) + " rows at position " + std::to_string(p0) +
                    " do not fit the draft context");
    const int64_t d = h.n_embd, hd = h.head_dim, nh = h.n_head, nkv = h.n_head_kv, ff = h.n_ff;
    for (int64_t i = 0; i < n; ++i) pos_[static_cast<size_t>(i)] = p0 + static_cast<int32_t>(i);

    // u = eh_proj [enorm(E[x]); hnorm(h)]
    TensorView e = view(e_, d, n), hn = view(hn_, d, n);
    embed_head_inputs(ops_, h.token_embd, tokens, n, input_rows, e);
    ops_.rms_norm(e, h.enorm.data(), h.eps, e);
    ops_.rms_norm(TensorView::contiguous(ElementType::F32, hrows, {d, n}), h.hnorm.data(), h.eps, hn);
    for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&cat_[static_cast<size_t>(i * 2 * d)], &e_[static_cast<size_t>(i * d)], d * sizeof(float));
        std::memcpy(&cat_[static_cast<size_t>(i * 2 * d + d)], &hn_[static_cast<size_t>(i * d)], d * sizeof(float));
    }
    TensorView u = view(u_, d, n), nx = view(n_, d, n), o = view(o_, d, n);
    ops_.matmul(h.eh_proj, view(cat_, 2 * d, n), u);

    // Attention (causal over the block's own cache).
    ops_.rms_norm(u, h.attn_norm.data(), h.eps, nx);
    TensorView q = view(q_, hd, nh, n), k = view(k_, hd, nkv, n), v = view(v_, hd, nkv, n);
    if (h.wqkv.data) {
        const int64_t rows = (nh + 2 * nkv) * hd;
        ops_.matmul(h.wqkv, nx, view(qkv_, rows, n));
        for (int64_t i = 0; i < n; ++i) {
            const float* src = &qkv_[static_cast<size_t>(i * rows)];
            std::memcpy(&q_[static_cast<size_t>(i * nh * hd)], src, nh * hd * sizeof(float));
            std::memcpy(&k_[static_cast<size_t>(i * nkv * hd)], src + nh * hd, nkv * hd * sizeof(float));
            std::memcpy(&v_[static_cast<size_t>(i * nkv * hd)], src + (nh + nkv) * hd, nkv * hd * sizeof(float));
        }
    } else {
        ops_.matmul(h.wq, nx, view(q_, nh * hd, n));
        ops_.matmul(h.wk, nx, view(k_, nkv * hd, n));
        ops_.matmul(h.wv, nx, view(v_, nkv * hd, n));
    }
    ops_.rope(q, pos_.data(), rope_, q);
    ops_.rope(k, pos_.data(), rope_, k);
    const size_t row = static_cast<size_t>(hd * nkv);
    ops_.convert(k, TensorView::contiguous(ElementType::F16, &k_cache_[row * static_cast<size_t>(p0)], {hd, nkv, n}));
    ops_.convert(v, TensorView::contiguous(ElementType::F16, &v_cache_[row * static_cast<size_t>(p0)], {hd, nkv, n}));
    ops::AttentionParams ap;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    ap.causal = true;
    ap.window = h.window;
    ap.sinks = h.sinks.empty() ? nullptr : h.sinks.data();
    ap.positions = pos_.data();
    const int64_t n_kv = p0 + n;
    TensorView attn = view(attn_, hd, nh, n);
    ops_.attention(q, TensorView::contiguous(ElementType::F16, k_cache_.data(), {hd, nkv, n_kv}),
                   TensorView::contiguous(ElementType::F16, v_cache_.data(), {hd, nkv, n_kv}), ap, attn);
    ops_.matmul(h.wo, view(attn_, hd * nh, n), o);
    ops_.add(u, o, u);

    // SwiGLU feed-forward.
    ops_.rms_norm(u, h.ffn_norm.data(), h.eps, nx);
    TensorView ga = view(gate_, ff, n), up = view(up_, ff, n);
    ops_.matmul(h.gate, nx, ga);
    ops_.matmul(h.up, nx, up);
    ops_.swiglu(ga, up, ga);
    ops_.matmul(h.down, ga, o);
    ops_.add(u, o, u);
    if (!logits) return;

    // The last row: h_next (pre-norm, mimo2) and its logits.
    std::memcpy(h_last_.data(), &u_[static_cast<size_t>((n - 1) * d)], d * sizeof(float));
    ops_.rms_norm(view(h_last_, d, 1), h.head_norm.data(), h.eps, view(normed_, d, 1));
    ops_.matmul(h.head, view(normed_, d, 1), view(logits_, h.n_vocab, 1));
}

}  // namespace cria::spec
