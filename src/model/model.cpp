// Loading a model for the fast path: hyperparameters, then a view of every
// weight matrix straight into the file's mapping, then (by default) packed
// copies of the matrices whose kernels read a packed layout faster; the
// mapped pages of those are then no longer touched.

#include "cria/model/model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <span>
#include <thread>

#include "cria/core/error.h"
#include "cria/cpu/features.h"
#include "cria/matmul/matmul.h"
#include "cria/gguf/file.h"
#include "cria/quant/quantize.h"
#include "model/arch.h"
#include "model/blocks.h"
#include "model/tensor_table.h"

namespace cria::model {
namespace {

// Memory for a packed matrix: 64-byte aligned; large ones on 2 MiB
// boundaries and advised to use huge pages (fewer TLB misses while the
// kernels stream them).
std::shared_ptr<void> allocate_packed(size_t bytes) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t align = bytes >= kHuge ? kHuge : 64;
    const size_t rounded = (bytes + align - 1) / align * align;
    void* p = ::operator new[](rounded, std::align_val_t{align});
    if (align == kHuge) ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
    return std::shared_ptr<void>(p, [align](void* q) { ::operator delete[](q, std::align_val_t{align}); });
}

// One packed matrix to make: the rows of `parts` one after another (one
// part, or the matrices that multiply the same input: [q; k; v], [gate; up]),
// which replaces them in `target`. Stacks of expert matrices ([k, rows,
// n_expert]) are packed expert by expert, each expert's [gate; up] joined.
struct PackJob {
    std::vector<ops::TensorView*> parts;
    ops::TensorView* target;
};

// Whether the parts can be packed as one matrix (per expert) by `isa`'s kernels.
matmul::Packing job_packing(const PackJob& job, cpu::Isa isa) {
    const ops::TensorView& first = *job.parts.front();
    if (!first.data || first.weight_packing != matmul::Packing::None || first.ne[3] != 1)
        return matmul::Packing::None;
    for (const ops::TensorView* v : job.parts)
        if (!v->data || v->type != first.type || v->ne[0] != first.ne[0] || v->ne[2] != first.ne[2] || v->ne[3] != 1 ||
            v->weight_packing != matmul::Packing::None)
            return matmul::Packing::None;
    return matmul::preferred_packing(first.type, isa);
}

// Makes the packed matrix of a job (null when it is not packed) and points
// its target at it; the parts it absorbed are cleared.
std::shared_ptr<void> pack_job(const PackJob& job, cpu::Isa isa) {
    const matmul::Packing packing = job_packing(job, isa);
    if (packing == matmul::Packing::None) return nullptr;
    const ops::TensorView first = *job.parts.front();  // a copy: the parts are cleared below
    const int64_t k = first.ne[0], n_matrices = first.ne[2];
    int64_t rows = 0;
    for (const ops::TensorView* v : job.parts) rows += v->ne[1];
    const size_t matrix_bytes = matmul::packed_bytes(first.type, rows, k, packing);
    if (matrix_bytes == 0) return nullptr;

    std::shared_ptr<void> copy = allocate_packed(matrix_bytes * static_cast<size_t>(n_matrices));
    const size_t row_bytes = first.row_bytes();
    std::vector<uint8_t> joined;
    for (int64_t e = 0; e < n_matrices; ++e) {
        // The rows to pack: the file's, or the parts copied one after another.
        matmul::WeightMatrix plain{first.type, first.row(0, e), rows, k, first.nb[1]};
        if (job.parts.size() > 1) {
            joined.resize(row_bytes * static_cast<size_t>(rows));
            uint8_t* out = joined.data();
            for (const ops::TensorView* v : job.parts)
                for (int64_t r = 0; r < v->ne[1]; ++r, out += row_bytes) std::memcpy(out, v->row(r, e), row_bytes);
            plain = {first.type, joined.data(), rows, k, row_bytes};
        }
        matmul::pack_weights(plain, packing, static_cast<uint8_t*>(copy.get()) + matrix_bytes * static_cast<size_t>(e));
    }
    for (ops::TensorView* v : job.parts) *v = ops::TensorView{};
    *job.target = ops::TensorView::contiguous(first.type, copy.get(), {k, rows, n_matrices});
    job.target->nb[2] = matrix_bytes;  // expert e's packed matrix
    job.target->nb[3] = matrix_bytes * static_cast<size_t>(n_matrices);
    job.target->weight_packing = packing;
    return copy;
}

}  // namespace

void Workspace::reserve(const Model& model, int64_t n) {
    if (n <= capacity_) return;
    const HParams& hp = model.hparams();
    const auto size = [n](int64_t rows) { return static_cast<size_t>(rows * n); };
    const int64_t nq = hp.n_embd_q(), nk = hp.n_embd_k(), nv = hp.n_embd_v();
    x.resize(size(hp.n_embd));
    h.resize(size(hp.n_embd));
    q.resize(size(nq));
    k.resize(size(nk));
    v.resize(size(nv));
    qkv.resize(size(model.widest_joined_output()));
    attn.resize(size(int64_t{hp.n_head} * hp.head_dim_v));
    o.resize(size(hp.n_embd));
    gate.resize(size(std::max(hp.n_ff, hp.n_ff_shexp)));
    up.resize(size(std::max(hp.n_ff, hp.n_ff_shexp)));
    out_rows.resize(size(hp.n_embd));
    if (hp.n_expert > 0) {
        const int64_t k = hp.n_expert_used;
        router.resize(size(hp.n_expert));
        expert_weights.resize(size(k));
        expert_ids.resize(size(k));
        expert_gate.resize(size(k * hp.n_ff_exp));
        expert_up.resize(size(k * hp.n_ff_exp));
        expert_gate_up.resize(size(2 * k * hp.n_ff_exp));
        expert_out.resize(size(k * hp.n_embd));
        if (hp.fused_gate_up_exps) expert_gate_up.resize(size(2 * k * hp.n_ff_exp));
    }
    if (hp.n_lora_kv > 0) {
        mla_q_a.resize(size(hp.n_lora_q));
        mla_kv.resize(size(int64_t{hp.n_lora_kv} + hp.n_rot));
        mla_q.resize(size(int64_t{hp.n_head} * hp.head_dim_mla));
        mla_v.resize(size(int64_t{hp.n_head} * hp.head_dim_v_mla));
        mla_gate.resize(size(int64_t{hp.n_head} * hp.head_dim_v_mla));
    }
    if (std::find(hp.delta_net.layers.begin(), hp.delta_net.layers.end(), true) != hp.delta_net.layers.end()) {
        const HParams::DeltaNet& dn = hp.delta_net;
        delta_qkv.resize(size(std::max<int64_t>(dn.n_conv(), 2 * nq)));  // also the gated attention's [q; gate]
        delta_conv.resize(size(dn.n_conv()));
        delta_z.resize(size(dn.n_value()));
        delta_beta.resize(size(3 * int64_t{dn.n_v_heads}));  // beta, then qwen3next's ssm_ba (beta and alpha)
        delta_g.resize(size(dn.n_v_heads));
        delta_out.resize(size(dn.n_value()));
    }
    if (hp.n_expert_latent > 0) moe_latent.resize(size(hp.n_expert_latent));
    if (hp.attn_res_block_size > 0) {
        const int64_t banks = (hp.n_layer + hp.attn_res_block_size - 1) / hp.attn_res_block_size;
        attn_res.resize(size((2 + banks) * int64_t{hp.n_embd}));
    }
    if (hp.kda.head_dim > 0) {
        const int64_t D = hp.kda.n_value();
        for (std::vector<float>* b : {&kda_q, &kda_k, &kda_v, &kda_g, &kda_gate, &kda_out}) b->resize(size(D));
        kda_low.resize(size(hp.kda.head_dim));
        kda_beta.resize(size(hp.kda.n_heads));
    }
    if (hp.has_recurrent_layers()) {
        // Mamba-1/2 mixers are d_inner wide; LFM2's short convolution n_embd ([B | C | x]).
        const int64_t d_inner = std::max<int64_t>(hp.ssm_inner, hp.n_embd), gn = int64_t{hp.ssm_groups} * hp.ssm_state;
        ssm_proj.resize(size(std::max(2 * d_inner + 2 * gn + hp.ssm_dt_rank, 3 * d_inner)));
        ssm_conv.resize(size(d_inner + 2 * gn));
        ssm_xdb.resize(size(hp.ssm_dt_rank + 2 * int64_t{hp.ssm_state}));
        ssm_dt.resize(size(std::max<int64_t>(d_inner, hp.ssm_dt_rank)));
        ssm_y.resize(size(d_inner));
        ssm_conv_before.resize(hp.recurrent_conv_floats);
    }
    capacity_ = n;
}

std::unique_ptr<Model> Model::load(const std::string& path, gguf::LoadMode mode, bool pack_weights,
                                   LayerRange layers) {
    return from_file(std::shared_ptr<const gguf::File>(gguf::File::open(path, mode)), pack_weights, layers);
}

std::unique_ptr<Model> Model::from_file(std::shared_ptr<const gguf::File> file, bool pack_weights, LayerRange layers) {
    std::unique_ptr<Model> m(new Model());
    m->file_ = std::move(file);
    m->hp_ = read_hparams(*m->file_);
    if (layers.end == UINT32_MAX) layers.end = m->hp_.n_layer;
    if (layers.begin >= layers.end || layers.end > m->hp_.n_layer)
        throw Error("model: layers [" + std::to_string(layers.begin) + ", " + std::to_string(layers.end) +
                    ") are not a non-empty range of the model's " + std::to_string(m->hp_.n_layer) + " layers");
    m->layers_ = layers;
    m->arch_ = find_architecture(m->hp_.arch_name);
    m->weights_.layers.resize(m->hp_.n_layer);
    TensorTable table;
    m->arch_->declare_tensors(m->hp_, table, m->weights_);
    load_tensors(*m->file_, table, m->hp_.arch_name);
    if (!m->weights_.output.present()) m->weights_.output.w = m->weights_.token_embd;  // tied
    // The scratch a fused or joined product is split from: the widest matrix
    // output of a layer, or the rows of a joined group.
    for (const TensorTable::Entry& e : table.entries())
        if (e.kind == TensorTable::Kind::Matrix && e.view != &m->weights_.output.w)
            m->widest_joined_output_ = std::max(m->widest_joined_output_, static_cast<int64_t>(e.shape[1]));
    for (const TensorTable::Join& j : table.joins()) {
        int64_t rows = 0;
        for (const Linear* part : j.parts) rows += part->n_out();
        m->widest_joined_output_ = std::max(m->widest_joined_output_, rows);
    }
    if (pack_weights) m->pack_weights(table, cpu::best_isa());
    return m;
}

void Model::pack_weights(const TensorTable& table, cpu::Isa isa) {
    // Every matrix of the table is packed (token_embd stays as it is: its
    // rows are looked up; a tied output matrix gets its own packed copy).
    // The table's groups of matrices that multiply the same input are joined
    // into one ([q; k; v], [gate; up]): one product, one pass over the
    // activations, and larger products, which stream better.
    std::vector<PackJob> jobs;
    std::vector<const ops::TensorView*> in_joins;
    for (const TensorTable::Join& j : table.joins()) {
        PackJob job{{}, &j.target->w};
        for (Linear* part : j.parts) job.parts.push_back(&part->w);
        if (!j.target->present() && job_packing(job, isa) != matmul::Packing::None) {
            jobs.push_back(job);
            in_joins.insert(in_joins.end(), job.parts.begin(), job.parts.end());
        }
    }
    // Each expert's gate and up multiply the same input too: joined per expert.
    for (LayerWeights& lw : weights_.layers) {
        PackJob job{{&lw.gate_exps.w, &lw.up_exps.w}, &lw.gate_up_exps.w};
        if (lw.gate_exps.present() && lw.up_exps.present() && !lw.gate_up_exps.present() &&
            job_packing(job, isa) != matmul::Packing::None) {
            jobs.push_back(job);
            in_joins.insert(in_joins.end(), job.parts.begin(), job.parts.end());
        }
    }
    for (const TensorTable::Entry& e : table.entries())
        if ((e.kind == TensorTable::Kind::Matrix || e.kind == TensorTable::Kind::ExpertMatrix) && e.view->data &&
            std::find(in_joins.begin(), in_joins.end(), e.view) == in_joins.end())
            jobs.push_back({{e.view}, e.view});
    // A pipeline stage packs only what it computes: packing reads every
    // page of a matrix, and the point of the stage is not to hold the rest.
    std::erase_if(jobs, [&](const PackJob& job) { return held_elsewhere(job.target); });
    // The file's bytes of each job, released once it is packed.
    std::vector<std::vector<std::span<const uint8_t>>> sources(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        for (const ops::TensorView* v : jobs[i].parts)
            if (v->data)
                sources[i].emplace_back(static_cast<const uint8_t*>(v->data), v->nb[1] * static_cast<size_t>(v->ne[1] * v->ne[2]));
    std::vector<std::shared_ptr<void>> copies(jobs.size());

    const uint8_t* embd = static_cast<const uint8_t*>(weights_.token_embd.data);
    // Packing is a memory-bound transposition: spread the matrices over the
    // cores (the file's pages are read and the copies written once).
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    const auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
            try {
                copies[i] = pack_job(jobs[i], isa);
                // The file's copy is no longer read (unless it is also the
                // embedding of a model that looks its rows up: a later
                // pipeline stage does not): let its pages go now, so the
                // peak stays low.
                if (copies[i])
                    for (std::span<const uint8_t> src : sources[i])
                        if (src.data() != embd || layers_.begin > 0) file_->release_pages(src);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failure_mutex);
                if (!failure) failure = std::current_exception();
            }
        }
    };
    const size_t n_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);

    for (size_t i = 0; i < jobs.size(); ++i) {
        if (!copies[i]) continue;
        const ops::TensorView& t = *jobs[i].target;
        packed_bytes_ += matmul::packed_bytes(t.type, t.ne[1], t.ne[0], t.weight_packing) * static_cast<size_t>(t.ne[2]);
        packed_storage_.push_back(std::move(copies[i]));
    }
}

bool Model::held_elsewhere(const void* field) const {
    if (holds_all_layers()) return false;
    const auto* p = static_cast<const uint8_t*>(field);
    const auto inside = [p](const auto& object) {
        const auto* first = reinterpret_cast<const uint8_t*>(&object);
        return p >= first && p < first + sizeof(object);
    };
    if (inside(weights_.output)) return layers_.end != hp_.n_layer;
    for (uint32_t l = 0; l < weights_.layers.size(); ++l)
        if (inside(weights_.layers[l])) return l < layers_.begin || l >= layers_.end;
    return false;
}

uint64_t Model::n_params() const {
    uint64_t n = 0;
    for (const auto& t : file_->tensors()) n += t.n_elements();
    return n;
}

uint64_t Model::size_bytes() const {
    uint64_t n = 0;
    for (const auto& t : file_->tensors()) n += t.n_bytes;
    return n;
}

std::string Model::description() const {
    // llama-bench prints "<arch> <size class> <file type>", e.g. "llama 1B Q4_0".
    const double params = static_cast<double>(n_params());
    char size[32];
    if (params >= 1e9)
        std::snprintf(size, sizeof size, "%.0fB", params / 1e9);
    else if (params >= 1e6)
        std::snprintf(size, sizeof size, "%.0fM", params / 1e6);
    else
        std::snprintf(size, sizeof size, "%.0fK", params / 1e3);
    // The file type: the type of most weight bytes.
    std::vector<std::pair<uint64_t, ElementType>> by_type;
    for (const auto& t : file_->tensors()) {
        auto it = std::find_if(by_type.begin(), by_type.end(), [&](const auto& e) { return e.second == t.type; });
        if (it == by_type.end())
            by_type.emplace_back(t.n_bytes, t.type);
        else
            it->first += t.n_bytes;
    }
    std::string type = "?";
    if (!by_type.empty()) type = std::string(element_type_name(std::max_element(by_type.begin(), by_type.end())->second));
    for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return hp_.arch_name + " " + size + " " + type;
}

bool Model::long_rope_for_context(uint32_t n_ctx) const { return model::long_rope_for_context(hp_, n_ctx); }

ops::RopeParams Model::rope_params(uint32_t layer, bool long_rope) const {
    ops::RopeParams p;
    p.n_dims = hp_.uses_rope(layer) ? static_cast<int>(hp_.n_rot) : 0;  // 0: a layer without rope
    switch (hp_.rope_order) {
        case RopeOrder::Normal: p.order = ops::RopeOrder::Normal; break;
        case RopeOrder::NeoX: p.order = ops::RopeOrder::NeoX; break;
        case RopeOrder::MRope:
            p.order = ops::RopeOrder::MRope;
            std::copy(std::begin(hp_.rope_sections), std::end(hp_.rope_sections), p.sections);
            break;
    }
    const bool swa = hp_.is_swa(layer);
    p.freq_base = swa ? hp_.rope_freq_base_swa : hp_.rope_freq_base;
    p.freq_scale = swa ? hp_.rope_freq_scale_swa : hp_.rope_freq_scale;
    p.n_ctx_orig = static_cast<int>(hp_.n_ctx_orig ? hp_.n_ctx_orig : hp_.n_ctx_train);
    p.attn_factor = hp_.rope_attn_factor;
    p.ext_factor = hp_.rope_yarn_ext_factor;
    p.beta_fast = hp_.rope_yarn_beta_fast;
    p.beta_slow = hp_.rope_yarn_beta_slow;
    const std::vector<float>& factors =
        long_rope && !weights_.rope_factors_long.empty() ? weights_.rope_factors_long : weights_.rope_factors;
    p.freq_factors = factors.empty() ? nullptr : factors.data();
    return p;
}

RecurrentState AttentionMemory::recurrent_state(uint32_t layer, int32_t) {
    throw Error("forward: layer " + std::to_string(layer) + " is recurrent, and this memory keeps no recurrent state");
}

void AttentionMemory::record_position(uint32_t layer, int32_t, int32_t) {
    throw Error("forward: layer " + std::to_string(layer) + " is recurrent, and this memory keeps no recurrent state");
}

bool AttentionMemory::keeps_every_position(uint32_t, int32_t) { return false; }

ops::RopeParams Model::rope_shift_params(uint32_t layer, bool long_rope) const {
    ops::RopeParams p = rope_params(layer, long_rope);
    // The op multiplies cos/sin by attn_factor, and by 1 + 0.1 ln(1 / freq_scale) with YaRN.
    p.attn_factor = p.ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * std::log(1.0f / p.freq_scale)) : 1.0f;
    return p;
}

void Model::forward(ops::Ops& ops, Workspace& ws, const ForwardInput& in, AttentionMemory& memory, float* logits,
                    float* hidden) const {
    if (in.n_tokens <= 0) throw Error("forward: the micro-batch is empty");
    if ((in.tokens == nullptr) == (in.embd == nullptr)) throw Error("forward: give either tokens or embeddings");
    if (in.positions == nullptr) throw Error("forward: positions are missing");
    if (in.n_outputs < 0 || in.n_outputs > in.n_tokens) throw Error("forward: bad number of outputs");
    for (size_t c = 0; c < in.n_capture; ++c)
        if (in.capture_layers[c] > hp_.n_layer)
            throw Error("forward: capture layer " + std::to_string(in.capture_layers[c]) + " is beyond the " +
                        std::to_string(hp_.n_layer) + " layers");
    if (hp_.has_recurrent_layers() && in.seq_masks == nullptr)
        throw Error("forward: a model with recurrent layers needs every token's sequence (seq_masks)");
    ws.reserve(*this, in.n_tokens);
    blocks::Step step{ops, hp_, weights_, ws, in, memory, *this, in.n_tokens, layers_.begin, layers_.end};
    float* out_logits = in.want_logits ? logits : nullptr;
    float* out_hidden = in.want_hidden ? hidden : nullptr;
    arch_->forward(step, out_logits, out_hidden);
}

}  // namespace cria::model
