#include "cria/memory/kv_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "cria/core/error.h"
#include "cria/quant/quantize.h"

namespace cria::memory {
namespace {

bool is_cache_type(ElementType t) {
    return t == ElementType::F32 || t == ElementType::F16 || t == ElementType::BF16 || t == ElementType::Q8_0 ||
           t == ElementType::Q4_0;
}

size_t row_bytes(ElementType t, uint32_t n, const char* what) {
    const auto bytes = row_size_bytes(t, n);
    if (!bytes)
        throw Error(std::string("KV cache: a ") + what + " head of " + std::to_string(n) + " values cannot be stored as " +
                    std::string(element_type_name(t)) + " (the head size must be a multiple of its block size)");
    return static_cast<size_t>(*bytes);
}

// Writes one token's F32 values in the cache type.
void encode(ElementType t, const float* src, uint8_t* dst, int64_t n) {
    if (t == ElementType::F32)
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    else
        quant::quantize_row(t, src, dst, n);
}

constexpr int32_t kNoPos = -1;

}  // namespace

KvCache::KvCache(const KvCacheParams& p) : params_(p) {
    // n_layer 0: a pipeline rank that holds none of these layers still tracks
    // the cells, so that it answers as the ranks that do (runtime/pipeline.h).
    if (p.n_cells == 0 || p.n_head_kv == 0 || p.head_dim == 0 || p.head_dim_v == 0)
        throw Error("KV cache: sizes must be positive");
    if (p.n_swa > 0 && p.n_chunk > 0) throw Error("KV cache: a sliding window and chunks cannot be combined");
    if (!is_cache_type(p.type_k) || !is_cache_type(p.type_v))
        throw Error("KV cache: types must be f32, f16, bf16, q8_0 or q4_0");
    k_row_bytes_ = row_bytes(p.type_k, p.head_dim, "key");
    if (p.rope_first >= p.head_dim) throw Error("KV cache: the roped part of the keys starts beyond them");
    if (p.value_in_key) {
        if (p.head_dim_v > p.head_dim) throw Error("KV cache: values read from the keys cannot be wider than them");
        row_bytes(p.type_k, p.head_dim_v, "value");  // the value prefix must be whole blocks of the key type
        v_row_bytes_ = 0;
    } else {
        v_row_bytes_ = row_bytes(p.type_v, p.head_dim_v, "value");
    }
    k_cell_bytes_ = k_row_bytes_ * p.n_head_kv;
    v_cell_bytes_ = v_row_bytes_ * p.n_head_kv;
    k_.resize(p.n_layer);
    v_.resize(p.n_layer);
    for (uint32_t l = 0; l < p.n_layer; ++l) {
        k_[l].assign(k_cell_bytes_ * p.n_cells, 0);
        v_[l].assign(v_cell_bytes_ * p.n_cells, 0);
    }
    pos_.assign(p.n_cells, kNoPos);
    order_.assign(p.n_cells, 0);
    seqs_.assign(p.n_cells, 0);
    shift_.assign(p.n_cells, 0);
}

uint32_t KvCache::n_used() const {
    return static_cast<uint32_t>(std::count_if(seqs_.begin(), seqs_.end(), [](uint64_t s) { return s != 0; }));
}

size_t KvCache::memory_bytes() const { return (k_cell_bytes_ + v_cell_bytes_) * params_.n_cells * params_.n_layer; }

void KvCache::check_seq(SeqId seq) const {
    if (seq < 0 || seq >= kMaxSequences)
        throw Error("sequence id " + std::to_string(seq) + " is outside 0.." + std::to_string(kMaxSequences - 1));
}

void KvCache::free_cell(uint32_t c) {
    seqs_[c] = 0;
    pos_[c] = kNoPos;
    order_[c] = 0;
    shift_[c] = 0;
    while (n_hi_ > 0 && seqs_[n_hi_ - 1] == 0) --n_hi_;
}

void KvCache::prune_window() {
    // A sequence's next tokens start at its lowest position in this
    // micro-batch; cells at least n_swa before that (or before the start of
    // its chunk) are never seen again.
    const uint32_t w = params_.n_swa, chunk = params_.n_chunk;
    int32_t first[kMaxSequences];
    std::fill(std::begin(first), std::end(first), std::numeric_limits<int32_t>::max());
    for (int64_t i = 0; i < ubatch_.n_tokens; ++i)
        for (uint64_t m = ub_seqs_[i]; m != 0; m &= m - 1) {
            const int s = std::countr_zero(m);
            first[s] = std::min(first[s], ub_pos_[i]);
        }
    for (uint32_t c = 0; c < n_hi_; ++c) {
        for (uint64_t m = seqs_[c]; m != 0; m &= m - 1) {
            const int s = std::countr_zero(m);
            if (first[s] == std::numeric_limits<int32_t>::max()) continue;
            const bool outside = chunk > 0 ? pos_[c] < first[s] - first[s] % static_cast<int32_t>(chunk)
                                           : static_cast<int64_t>(first[s]) - pos_[c] >= static_cast<int64_t>(w);
            if (outside) seqs_[c] &= ~(uint64_t{1} << s);
        }
        if (seqs_[c] == 0 && pos_[c] != kNoPos) {
            pos_[c] = kNoPos;
            shift_[c] = 0;
        }
    }
    while (n_hi_ > 0 && seqs_[n_hi_ - 1] == 0) --n_hi_;
}

bool KvCache::place(const UbatchView& ub) {
    const auto n = static_cast<size_t>(ub.n_tokens);
    ub_pos_.assign(ub.positions, ub.positions + n);
    ub_seqs_.assign(ub.seq_masks, ub.seq_masks + n);
    if (ub.orders != nullptr)
        ub_order_.assign(ub.orders, ub.orders + n);
    else
        ub_order_.assign(n, 0);
    ubatch_ = UbatchView{ub.n_tokens, ub_pos_.data(), ub_seqs_.data(), ub_order_.data(), ub.causal};
    plans_[0].valid = plans_[1].valid = false;
    if (params_.n_swa > 0 || params_.n_chunk > 0) prune_window();

    slots_.clear();
    // First choice: the first run of n free cells, which keeps a single
    // sequence's cells in position order (attention then reads in place).
    uint32_t run = 0;
    for (uint32_t c = 0; c < params_.n_cells && slots_.empty(); ++c) {
        run = seqs_[c] == 0 ? run + 1 : 0;
        if (run == n)
            for (uint32_t i = 0; i < n; ++i) slots_.push_back(c + 1 - static_cast<uint32_t>(n) + i);
    }
    if (slots_.empty()) {
        for (uint32_t c = 0; c < params_.n_cells && slots_.size() < n; ++c)
            if (seqs_[c] == 0) slots_.push_back(c);
        if (slots_.size() < n) {
            slots_.clear();
            return false;
        }
    }
    for (size_t i = 0; i < n; ++i) {
        const uint32_t c = slots_[i];
        pos_[c] = ub_pos_[i];
        order_[c] = ub_order_[i];
        seqs_[c] = ub_seqs_[i];
        shift_[c] = 0;
        n_hi_ = std::max(n_hi_, c + 1);
    }
    return true;
}

void KvCache::unplace() {
    for (uint32_t c : slots_) free_cell(c);
    slots_.clear();
    plans_[0].valid = plans_[1].valid = false;
}

void KvCache::store(uint32_t layer, const ops::TensorView& k, const ops::TensorView& v) {
    const int64_t n = static_cast<int64_t>(slots_.size());
    const int64_t nk = int64_t{params_.head_dim} * params_.n_head_kv, nv = int64_t{params_.head_dim_v} * params_.n_head_kv;
    const bool store_v = !params_.value_in_key;
    if (k.ne[0] * k.ne[1] != nk || k.ne[2] != n || !k.is_contiguous() ||
        (store_v && (v.ne[0] * v.ne[1] != nv || v.ne[2] != n || !v.is_contiguous())))
        throw Error("KV cache: store() needs dense K/V of the placed micro-batch");
    for (int64_t i = 0; i < n; ++i) {
        const size_t c = slots_[static_cast<size_t>(i)];
        encode(params_.type_k, reinterpret_cast<const float*>(k.row(0, i)), k_[layer].data() + c * k_cell_bytes_, nk);
        if (store_v)
            encode(params_.type_v, reinterpret_cast<const float*>(v.row(0, i)), v_[layer].data() + c * v_cell_bytes_, nv);
    }
}

ops::TensorView KvCache::k_view(uint32_t layer, uint32_t first, uint32_t count) const {
    return ops::TensorView::contiguous(params_.type_k, k_[layer].data() + first * k_cell_bytes_,
                                       {params_.head_dim, params_.n_head_kv, count});
}

ops::TensorView KvCache::v_view(uint32_t layer, uint32_t first, uint32_t count) const {
    if (params_.value_in_key) return value_prefix(k_view(layer, first, count));
    return ops::TensorView::contiguous(params_.type_v, v_[layer].data() + first * v_cell_bytes_,
                                       {params_.head_dim_v, params_.n_head_kv, count});
}

ops::TensorView KvCache::value_prefix(const ops::TensorView& keys) const {
    ops::TensorView v = keys;  // same rows and strides, only the first head_dim_v values of each
    v.ne[0] = params_.head_dim_v;
    return v;
}

const KvCache::Plan& KvCache::plan_for(uint32_t window) {
    Plan& plan = plans_[window > 0 ? 1 : 0];
    uint32_t& plan_window = plan_window_[window > 0 ? 1 : 0];
    if (plan.valid && plan_window == window) return plan;
    const auto n = static_cast<size_t>(ubatch_.n_tokens);
    plan.lo.assign(n, 1);
    plan.hi.assign(n, 0);
    plan.contiguous.assign(n, 0);
    plan.gather_offsets.assign(n + 1, 0);
    plan.gather_cells.clear();
    for (size_t t = 0; t < n; ++t) {
        const int s = std::countr_zero(ub_seqs_[t]);  // the first sequence decides, as in llama.cpp
        const int64_t p = ub_pos_[t];
        const int32_t order = ub_order_[t];
        const uint64_t bit = uint64_t{1} << s;
        // Causal: cells before p, and those at p not after this token. Not
        // causal: every cell of the sequence (a window still looks back only).
        const auto hidden = [&](uint32_t c) {
            if (!ubatch_.causal) return false;
            return pos_[c] > p || (pos_[c] == p && order_[c] > order);
        };
        uint32_t lo = 0, hi = 0, count = 0;
        const size_t gather_start = plan.gather_cells.size();
        for (uint32_t c = 0; c < n_hi_; ++c) {
            if (!(seqs_[c] & bit) || hidden(c) || (window > 0 && p - pos_[c] >= window)) continue;
            if (params_.n_chunk > 0 && pos_[c] < p - p % params_.n_chunk) continue;  // an earlier chunk
            if (count == 0) lo = c;
            hi = c;
            ++count;
            plan.gather_cells.push_back(c);
        }
        const bool contiguous = count > 0 && count == hi - lo + 1;
        plan.contiguous[t] = contiguous;
        if (contiguous) {
            plan.gather_cells.resize(gather_start);  // no copy needed
            plan.lo[t] = lo;
            plan.hi[t] = hi;
        }
        plan.gather_offsets[t + 1] = static_cast<uint32_t>(plan.gather_cells.size());
    }
    plan.valid = true;
    plan_window = window;
    return plan;
}

void KvCache::attend(ops::Ops& ops, uint32_t layer, const ops::TensorView& q, const ops::AttentionParams& params,
                     uint32_t window, const ops::TensorView& out) {
    const int64_t n = ubatch_.n_tokens;
    if (q.ne[2] != n || out.ne[2] != n) throw Error("KV cache: attend() needs the queries of the placed micro-batch");
    if (params_.n_swa > 0) window = std::min(window == 0 ? params_.n_swa : window, params_.n_swa);
    const Plan& plan = plan_for(window);
    current_plan_ = &plan;
    ops::AttentionParams ap = params;
    ap.window = window;
    int64_t t = 0;
    while (t < n) {
        if (plan.contiguous[t] && params_.n_chunk == 0) {
            // A run of tokens whose visible cells are what the op picks over
            // cells base.. for "position" hi - base: one call, cache in place.
            const uint32_t base = plan.lo[t];
            int64_t u = t + 1;
            const auto fits = [&](int64_t i) {
                if (!plan.contiguous[i] || plan.hi[i] < base) return false;
                const uint32_t want = window > 0 && plan.hi[i] + 1 >= base + window ? plan.hi[i] + 1 - window : base;
                return plan.lo[i] == want;
            };
            if (fits(t)) {
                while (u < n && fits(u)) ++u;
                uint32_t top = 0;
                run_positions_.resize(static_cast<size_t>(u - t));
                for (int64_t i = t; i < u; ++i) {
                    run_positions_[static_cast<size_t>(i - t)] = static_cast<int32_t>(plan.hi[i] - base);
                    top = std::max(top, plan.hi[i]);
                }
                ops::TensorView qt = q, ot = out;
                qt.data = q.row(0, t);
                ot.data = out.row(0, t);
                qt.ne[2] = ot.ne[2] = u - t;
                ap.causal = true;
                ap.positions = run_positions_.data();
                const uint32_t count = top - base + 1;
                ops.attention(qt, k_view(layer, base, count), v_view(layer, base, count), ap, ot);
                t = u;
                continue;
            }
        }
        attend_one(ops, layer, q, params, t, out);
        ++t;
    }
}

void KvCache::attend_one(ops::Ops& ops, uint32_t layer, const ops::TensorView& q, const ops::AttentionParams& params,
                         int64_t t, const ops::TensorView& out) {
    const Plan& plan = *current_plan_;
    ops::AttentionParams ap = params;
    ap.causal = false;
    ap.window = 0;
    ap.positions = nullptr;
    {
        ops::TensorView qt = q, ot = out;
        qt.data = q.row(0, t);
        ot.data = out.row(0, t);
        qt.ne[2] = ot.ne[2] = 1;
        if (plan.contiguous[t]) {
            const uint32_t lo = plan.lo[t], count = plan.hi[t] - plan.lo[t] + 1;
            ops.attention(qt, k_view(layer, lo, count), v_view(layer, lo, count), ap, ot);
            return;
        }
        const uint32_t begin = plan.gather_offsets[t], end = plan.gather_offsets[t + 1];
        const uint32_t count = end - begin;
        if (count == 0) {
            // Nothing visible (cannot happen for a token stored before attending).
            std::fill(reinterpret_cast<float*>(ot.data), reinterpret_cast<float*>(ot.data) + out.ne[0] * out.ne[1], 0.0f);
            return;
        }
        gather_k_.resize(count * k_cell_bytes_);
        gather_v_.resize(count * v_cell_bytes_);
        for (uint32_t i = 0; i < count; ++i) {
            const size_t c = plan.gather_cells[begin + i];
            std::memcpy(gather_k_.data() + i * k_cell_bytes_, k_[layer].data() + c * k_cell_bytes_, k_cell_bytes_);
            // A cache whose values live in the keys (MLA's latent) has no value rows:
            // nothing to copy, and memcpy must not see their null buffer.
            if (v_cell_bytes_ > 0)
                std::memcpy(gather_v_.data() + i * v_cell_bytes_, v_[layer].data() + c * v_cell_bytes_, v_cell_bytes_);
        }
        const auto kt = ops::TensorView::contiguous(params_.type_k, gather_k_.data(), {params_.head_dim, params_.n_head_kv, count});
        const auto vt = params_.value_in_key ? value_prefix(kt)
                                             : ops::TensorView::contiguous(params_.type_v, gather_v_.data(),
                                                                           {params_.head_dim_v, params_.n_head_kv, count});
        ops.attention(qt, kt, vt, ap, ot);
    }
}

void KvCache::clear() {
    std::fill(pos_.begin(), pos_.end(), kNoPos);
    std::fill(order_.begin(), order_.end(), 0);
    std::fill(seqs_.begin(), seqs_.end(), 0);
    std::fill(shift_.begin(), shift_.end(), 0);
    has_shift_ = false;
    n_hi_ = 0;
    for (Checkpoint& cp : checkpoints_) cp = Checkpoint{};
    plans_[0].valid = plans_[1].valid = false;
}

namespace {
bool in_range(int32_t pos, int32_t p0, int32_t p1) { return pos >= std::max(p0, 0) && (p1 < 0 || pos < p1); }
}  // namespace

bool KvCache::seq_rm(SeqId seq, int32_t p0, int32_t p1) {
    if (seq >= 0) check_seq(seq);
    for (uint32_t c = 0; c < params_.n_cells; ++c) {
        if (seqs_[c] == 0 || !in_range(pos_[c], p0, p1)) continue;
        if (seq < 0)
            seqs_[c] = 0;
        else
            seqs_[c] &= ~(uint64_t{1} << seq);
        if (seqs_[c] == 0) free_cell(c);
    }
    plans_[0].valid = plans_[1].valid = false;
    return true;
}

bool KvCache::seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) {
    check_seq(src);
    check_seq(dst);
    if (src == dst) return true;
    for (uint32_t c = 0; c < params_.n_cells; ++c)
        if ((seqs_[c] >> src & 1) && in_range(pos_[c], p0, p1)) seqs_[c] |= uint64_t{1} << dst;
    plans_[0].valid = plans_[1].valid = false;
    return true;
}

bool KvCache::seq_keep(SeqId seq) {
    check_seq(seq);
    for (uint32_t c = 0; c < params_.n_cells; ++c) {
        if (seqs_[c] == 0) continue;
        seqs_[c] &= uint64_t{1} << seq;
        if (seqs_[c] == 0) free_cell(c);
    }
    plans_[0].valid = plans_[1].valid = false;
    return true;
}

bool KvCache::seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) {
    check_seq(seq);
    if (delta == 0) return true;
    for (uint32_t c = 0; c < params_.n_cells; ++c) {
        if (!(seqs_[c] >> seq & 1) || !in_range(pos_[c], p0, p1)) continue;
        pos_[c] += delta;
        shift_[c] += delta;
        has_shift_ = true;
        if (pos_[c] < 0) free_cell(c);
    }
    plans_[0].valid = plans_[1].valid = false;
    return true;
}

int32_t KvCache::seq_pos_min(SeqId seq) const {
    check_seq(seq);
    int32_t best = -1;
    for (uint32_t c = 0; c < params_.n_cells; ++c)
        if (seqs_[c] >> seq & 1) best = best < 0 ? pos_[c] : std::min(best, pos_[c]);
    return best;
}

int32_t KvCache::seq_pos_max(SeqId seq) const {
    check_seq(seq);
    int32_t best = -1;
    for (uint32_t c = 0; c < params_.n_cells; ++c)
        if (seqs_[c] >> seq & 1) best = std::max(best, pos_[c]);
    return best;
}

void KvCache::apply_shift(ops::Ops& ops, const std::function<ops::RopeParams(uint32_t layer)>& rope_for_layer) {
    if (!has_shift_) return;
    std::vector<uint32_t> cells;
    std::vector<int32_t> deltas;
    for (uint32_t c = 0; c < params_.n_cells; ++c)
        if (seqs_[c] != 0 && shift_[c] != 0) {
            cells.push_back(c);
            deltas.push_back(shift_[c]);
        }
    const int64_t nk = int64_t{params_.head_dim} * params_.n_head_kv;
    const auto m = static_cast<int64_t>(cells.size());
    std::vector<int32_t> mrope_deltas;  // the four position streams, made when a layer uses M-RoPE
    convert_.resize(static_cast<size_t>(nk * m));
    for (uint32_t l = 0; l < params_.n_layer && m > 0; ++l) {
        const ops::RopeParams rope = rope_for_layer(l);
        if (rope.n_dims == 0) continue;  // a layer without rope: its keys do not depend on the position
        // Text positions under M-RoPE move t, h and w together; extra stays 0.
        const bool mrope = rope.order == ops::RopeOrder::MRope;
        if (mrope && mrope_deltas.empty()) {
            mrope_deltas.assign(4 * cells.size(), 0);
            for (size_t k = 0; k < 3; ++k)
                std::copy(deltas.begin(), deltas.end(), mrope_deltas.begin() + static_cast<std::ptrdiff_t>(k * cells.size()));
        }
        for (int64_t i = 0; i < m; ++i)
            quant::dequantize_row(params_.type_k, k_[l].data() + cells[static_cast<size_t>(i)] * k_cell_bytes_,
                                  convert_.data() + i * nk, nk);
        // Only the roped part of each head turns: from rope_first on (MLA:
        // the latent before it does not), a strided view of the rows.
        auto keys = ops::TensorView::contiguous(ElementType::F32, convert_.data() + params_.rope_first,
                                                {params_.head_dim - params_.rope_first, params_.n_head_kv, m});
        keys.nb[1] = params_.head_dim * sizeof(float);
        keys.nb[2] = keys.nb[1] * params_.n_head_kv;
        keys.nb[3] = keys.nb[2] * static_cast<size_t>(m);
        ops.rope(keys, mrope ? mrope_deltas.data() : deltas.data(), rope, keys);
        for (int64_t i = 0; i < m; ++i)
            encode(params_.type_k, convert_.data() + i * nk, k_[l].data() + cells[static_cast<size_t>(i)] * k_cell_bytes_, nk);
    }
    std::fill(shift_.begin(), shift_.end(), 0);
    has_shift_ = false;
}

}  // namespace cria::memory
