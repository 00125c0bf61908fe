#include "cria/runtime/context_shift.h"

#include <algorithm>
#include <bit>

#include "cria/core/error.h"

namespace cria::runtime {

std::string context_shift_refusal(const Context& ctx, uint32_t n_ctx_seq) {
    if (n_ctx_seq == 0) n_ctx_seq = ctx.n_ctx();
    const model::HParams& hp = ctx.model().hparams();
    if (hp.is_encoder) return "an encoder generates no tokens";
    if (hp.rope_order == model::RopeOrder::MRope)
        return "the model uses M-RoPE, whose positions are not one number per token (llama.cpp refuses it too)";
    const memory::HybridMemory& memory = ctx.memory();
    for (uint32_t l = 0; l < memory.n_layer(); ++l) {
        const auto& slot = memory.layer(l);
        if (slot.memory == nullptr) return "layer " + std::to_string(l) + " is held by another process of the pipeline";
        if (slot.recurrent != nullptr)
            return "layer " + std::to_string(l) + " keeps a recurrent state, which holds the whole history and cannot "
                   "drop a part of it";
        if (slot.kv == nullptr) continue;
        const memory::KvCacheParams& kp = slot.kv->params();
        // A window that covers the whole context never frees a cell, so its
        // cache holds everything a shifted window could see.
        if (kp.n_swa > 0 && kp.n_swa < n_ctx_seq)
            return "layer " + std::to_string(l) + " has a sliding window of " + std::to_string(kp.n_swa) +
                   " positions, smaller than the context of " + std::to_string(n_ctx_seq) +
                   ": its cache has already freed keys that the shifted window would see again";
        if (kp.n_chunk > 0 && kp.n_chunk < n_ctx_seq)
            return "layer " + std::to_string(l) + " attends in chunks of " + std::to_string(kp.n_chunk) +
                   " positions, which a shift would regroup";
    }
    return {};
}

void require_context_shift(const Context& ctx, const std::string& what, uint32_t n_ctx_seq) {
    const std::string why = context_shift_refusal(ctx, n_ctx_seq);
    if (!why.empty()) throw Error(what + ": this model cannot shift its context: " + why);
}

uint64_t sequences_sharing(const Context& ctx, SeqId seq, int32_t p0, int32_t p1) {
    const memory::HybridMemory& memory = ctx.memory();
    const uint64_t own = uint64_t{1} << seq;
    uint64_t others = 0;
    for (size_t i = 0; i < memory.n_children(); ++i) {
        const auto* kv = dynamic_cast<const memory::KvCache*>(&memory.child(i));
        if (kv == nullptr) continue;
        for (uint32_t c = 0; c < kv->n_cells(); ++c) {
            const uint64_t seqs = kv->cell_seqs(c);
            const int32_t pos = kv->cell_pos(c);
            if ((seqs & own) && pos >= p0 && pos < p1) others |= seqs & ~own;
        }
    }
    return others;
}

int32_t completion_n_keep(int32_t keep, size_t n_prompt, bool add_bos) {
    const auto n = static_cast<int32_t>(n_prompt);
    if (keep < 0 || keep > n) return n;
    return keep + (add_bos ? 1 : 0);
}

int32_t server_n_keep(int32_t keep, size_t n_prompt, bool add_bos, int32_t n_ctx) {
    int32_t n = keep < 0 ? static_cast<int32_t>(n_prompt) : keep;
    if (add_bos) ++n;
    return std::min(n_ctx - 4, n);
}

int32_t discard_count(int32_t n_past, int32_t n_keep, int32_t n_discard) {
    const int32_t n_left = n_past - n_keep;
    const int32_t n = n_discard > 0 ? n_discard : n_left / 2;
    return std::clamp(n, 0, std::max(0, n_left - 1));
}

int32_t shift_context(Context& ctx, SeqId seq, int32_t n_past, int32_t n_keep, int32_t n_discard,
                      uint32_t n_ctx_seq) {
    if (n_keep < 0 || n_discard < 0 || n_keep + n_discard > n_past)
        throw Error("context shift: keeping " + std::to_string(n_keep) + " and dropping " + std::to_string(n_discard) +
                    " of " + std::to_string(n_past) + " positions is out of range");
    if (n_discard == 0) return n_past;
    require_context_shift(ctx, "context shift", n_ctx_seq);
    if (const uint64_t others = sequences_sharing(ctx, seq, n_keep + n_discard, n_past))
        throw Error("context shift: sequence " + std::to_string(seq) + " shares the cells it would move with sequence " +
                    std::to_string(std::countr_zero(others)) + " (a shared prompt)");
    // Both succeed on the memories that context_shift_refusal lets through;
    // a false here is a memory this file does not know, reported as such.
    if (!ctx.memory_seq_rm(seq, n_keep, n_keep + n_discard) ||
        !ctx.memory_seq_add(seq, n_keep + n_discard, n_past, -n_discard))
        throw Error("context shift: the model's memory refused to drop or move positions");
    return n_past - n_discard;
}

}  // namespace cria::runtime
