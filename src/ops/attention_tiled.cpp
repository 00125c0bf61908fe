// Tiled (flash-style) attention for prompt processing. A task takes a tile
// of consecutive query tokens and one KV head; its rows are every (token,
// query head of that KV head's group) pair, so M = tokens x group rows share
// each key and value block. Keys are visited in blocks of kKeys; per block:
//   S = Q K^T     the block's keys converted to f32 and transposed once per
//                 tile, then one small matrix product for all M rows;
//   online softmax per row (running maximum and sum, the row's output
//                 rescaled when its maximum grows);
//   O += P V      the block's values converted to f32 once per tile, one
//                 small matrix product.
// Blocks that no row of the tile can see are never visited, and the mask is
// applied only to blocks that some row sees in part (the causal diagonal,
// window edges): the others are used as computed.
//
// Key blocks start at multiples of kKeys in the cache (not at a row's first
// visible key), and a row's scores, maxima, sums and products never depend on
// the other rows of its tile: keys a row cannot see (in a block its tile
// visits) are -inf scores, probability 0, which add exact zeros. Each output
// row is computed the same way whatever tile or thread handles it, so the
// tile size may follow the number of threads and results are still
// bit-identical for any thread count.

#include "ops/attention_tiled.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "cria/quant/quantize.h"
#include "ops/small_gemm.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

constexpr int64_t kKeys = 64;      // keys per block
// Query rows (tokens x group) a tile aims for: the more rows share a pass
// over the keys, the less each converts and reads (256 rows took 0.85x the
// CPU time of 128 and 0.7x that of 64 at 4096 tokens); tiles shrink, down to
// kMinTileRows, while there are fewer than kTasksPerThread tasks per thread.
constexpr int64_t kTileRows = 256;
constexpr int64_t kMinTileRows = 32;
constexpr int64_t kTasksPerThread = 4;
constexpr int64_t kKeysAtOnce = 16;  // keys converted together before transposing

struct TileScratch {
    std::vector<float> q;         // M x head_dim: the tile's queries, packed
    std::vector<float> kt;        // head_dim x kKeys: the key block, transposed
    std::vector<float> v;         // kKeys x head_dim_v: the value block
    std::vector<float> s;         // M x kKeys: scores, then probabilities
    std::vector<float> o;         // M x head_dim_v: unnormalised outputs
    std::vector<float> max, sum;  // per row: running maximum and denominator
    std::vector<float> rows;      // kKeysAtOnce key rows in f32
    std::vector<int64_t> lo, hi;  // per token: visible keys [lo, hi]
};

// One cache row as f32 (any cache type the op accepts).
void row_to_f32(const VecKernels& k, ElementType type, const char* src, float* dst, int64_t n) {
    switch (type) {
        case ElementType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            break;
        case ElementType::F16:
            k.f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n);
            break;
        case ElementType::BF16:
            k.bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n);
            break;
        default:
            quant::dequantize_row(type, src, dst, n);
    }
}

// Asks for rows [first, first + count) of one KV head of a cache to be
// brought into the cache hierarchy. The heads of a cache position are stored
// together, so one head's consecutive rows are n_kv_heads rows apart and a
// 4 KiB page holds only a few of them: too few for the hardware prefetchers
// to follow, and converting a block would wait on memory at every row.
void prefetch_rows(const TensorView& c, int64_t head, int64_t first, int64_t count, size_t row_bytes) {
    for (int64_t j = first; j < first + count; ++j) {
        const char* row = c.row(head, j);
        for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b, 0, 2);
    }
}

}  // namespace

void attention_tiled(cpu::ThreadPool& pool, const TensorView& q, const TensorView& kc, const TensorView& vc,
                     const AttentionParams& params, const TensorView& out) {
    const int64_t head_dim = q.ne[0], n_heads = q.ne[1], n_tokens = q.ne[2];
    const int64_t n_kv_heads = kc.ne[1], n_kv = kc.ne[2], head_dim_v = vc.ne[0];
    const int64_t group = n_heads / n_kv_heads;
    const auto tiles_of = [&](int64_t rows) {
        const int64_t tokens = std::max<int64_t>(1, rows / group);
        return std::pair{tokens, (n_tokens + tokens - 1) / tokens};
    };
    int64_t tile_rows = kTileRows;
    while (tile_rows > kMinTileRows && tiles_of(tile_rows).second * n_kv_heads < kTasksPerThread * pool.size())
        tile_rows /= 2;
    const auto [tokens_per_tile, n_tiles] = tiles_of(tile_rows);
    const int64_t max_rows = tokens_per_tile * group;
    const VecKernels& k = vec_kernels();
    const cpu::Isa isa = cpu::best_isa();
    // F32 values are multiplied in place when their rows are float-aligned.
    const bool v_in_place = vc.type == ElementType::F32 && vc.nb[2] % sizeof(float) == 0;
    const size_t k_row_bytes = *row_size_bytes(kc.type, static_cast<uint64_t>(head_dim));
    const size_t v_row_bytes = *row_size_bytes(vc.type, static_cast<uint64_t>(head_dim_v));
    std::vector<TileScratch> scratch(static_cast<size_t>(pool.size()));

    pool.parallel_for(n_tiles * n_kv_heads, [&](int64_t task, int thread) {
        // The tiles of one KV head one after the other, so its keys and values
        // stay in the core's cache from one tile to the next; under a causal
        // mask later tiles see more keys, so they go first. Tasks are claimed
        // one at a time (grain 1): in chunks of a whole head (the pool's
        // default, 4 per thread) a thread could wait out up to one head, an
        // eighth of the op at 2 threads; tile by tile the op ends on the last
        // head's smallest tiles.
        const int64_t kv_head = task / n_tiles;
        const int64_t tile = n_tiles - 1 - task % n_tiles;
        const int64_t t0 = tile * tokens_per_tile;
        const int64_t nt = std::min(tokens_per_tile, n_tokens - t0);
        const int64_t m = nt * group;  // row r: token t0 + r / group, head kv_head * group + r % group
        TileScratch& s = scratch[static_cast<size_t>(thread)];
        s.q.resize(static_cast<size_t>(max_rows * head_dim));
        s.kt.resize(static_cast<size_t>(head_dim * kKeys));
        s.v.resize(static_cast<size_t>(kKeys * head_dim_v));
        s.s.resize(static_cast<size_t>(max_rows * kKeys));
        s.o.assign(static_cast<size_t>(m * head_dim_v), 0.0f);
        s.max.assign(static_cast<size_t>(m), -std::numeric_limits<float>::infinity());
        s.sum.assign(static_cast<size_t>(m), 0.0f);
        s.rows.resize(static_cast<size_t>(kKeysAtOnce * head_dim));
        s.lo.resize(static_cast<size_t>(nt));
        s.hi.resize(static_cast<size_t>(nt));

        // Visible keys of each token, and of the tile as a whole.
        int64_t first = n_kv, last = -1;
        for (int64_t i = 0; i < nt; ++i) {
            const int64_t t = t0 + i;
            const int64_t pos = params.positions != nullptr ? params.positions[t] : n_kv - n_tokens + t;
            const int64_t hi = params.causal ? std::min(pos, n_kv - 1) : n_kv - 1;
            const int64_t lo = params.window > 0 ? std::max<int64_t>(0, pos - params.window + 1) : 0;
            s.lo[static_cast<size_t>(i)] = lo;
            s.hi[static_cast<size_t>(i)] = hi;
            if (lo <= hi) {
                first = std::min(first, lo);
                last = std::max(last, hi);
            }
        }
        for (int64_t r = 0; r < m; ++r) {
            const auto* src = reinterpret_cast<const float*>(q.row(kv_head * group + r % group, t0 + r / group));
            std::copy(src, src + head_dim, s.q.data() + r * head_dim);
        }

        for (int64_t start = first / kKeys * kKeys; start <= last; start += kKeys) {
            const int64_t count = std::min(kKeys, last + 1 - start);
            const int64_t end = start + count - 1;
            bool any_sees = false, all_see_all = true;
            for (size_t i = 0; i < static_cast<size_t>(nt); ++i) {
                if (s.lo[i] <= end && s.hi[i] >= start) any_sees = true;
                if (s.lo[i] > start || s.hi[i] < end) all_see_all = false;
            }
            if (!any_sees) continue;  // a gap between windows of different tokens
            if (start + kKeys <= last) {
                const int64_t next = std::min(kKeys, last + 1 - (start + kKeys));
                prefetch_rows(kc, kv_head, start + kKeys, next, k_row_bytes);
                prefetch_rows(vc, kv_head, start + kKeys, next, v_row_bytes);
            }

            // The key block transposed, kKeysAtOnce keys at a time: their rows
            // converted first, then kt written a run of kKeysAtOnce floats per
            // head_dim index (one key at a time would touch head_dim cache
            // lines of kt per key).
            for (int64_t j0 = 0; j0 < count; j0 += kKeysAtOnce) {
                const int64_t n = std::min(kKeysAtOnce, count - j0);
                for (int64_t j = 0; j < n; ++j)
                    row_to_f32(k, kc.type, kc.row(kv_head, start + j0 + j), s.rows.data() + j * head_dim, head_dim);
                for (int64_t d = 0; d < head_dim; ++d) {
                    float* dst = s.kt.data() + d * kKeys + j0;
                    for (int64_t j = 0; j < n; ++j) dst[j] = s.rows[static_cast<size_t>(j * head_dim + d)];
                }
            }
            small_gemm({.a = s.q.data(), .lda = head_dim, .b = s.kt.data(), .ldb = kKeys, .c = s.s.data(),
                        .ldc = kKeys, .m = m, .n = count, .k = head_dim},
                       isa);

            for (int64_t r = 0; r < m; ++r) {
                const size_t i = static_cast<size_t>(r / group);
                float* scores = s.s.data() + r * kKeys;
                if (s.lo[i] > end || s.hi[i] < start) {
                    // Nothing visible in this block: weight 0 for every value.
                    std::fill(scores, scores + count, 0.0f);
                    continue;
                }
                if (params.softcap > 0.0f) {
                    for (int64_t j = 0; j < count; ++j)
                        scores[j] = params.softcap * std::tanh(scores[j] * params.scale / params.softcap);
                } else {
                    k.scale(scores, params.scale, scores, count);
                }
                if (!all_see_all) {
                    for (int64_t j = 0; j < count; ++j)
                        if (start + j < s.lo[i] || start + j > s.hi[i]) scores[j] = -std::numeric_limits<float>::infinity();
                }
                float& running_max = s.max[static_cast<size_t>(r)];
                float& running_sum = s.sum[static_cast<size_t>(r)];
                const float block_max = k.max(scores, count);
                if (block_max > running_max) {
                    // Rescale what was accumulated against the old maximum.
                    const float factor = std::exp(running_max - block_max);
                    float* acc = s.o.data() + r * head_dim_v;
                    if (running_sum != 0.0f) k.scale(acc, factor, acc, head_dim_v);
                    running_sum *= factor;
                    running_max = block_max;
                }
                running_sum += k.exp_shift_sum(scores, running_max, scores, count);
            }

            const float* values = reinterpret_cast<const float*>(vc.row(kv_head, start));
            int64_t ldv = static_cast<int64_t>(vc.nb[2] / sizeof(float));
            if (!v_in_place || reinterpret_cast<uintptr_t>(values) % alignof(float) != 0) {
                for (int64_t j = 0; j < count; ++j)
                    row_to_f32(k, vc.type, vc.row(kv_head, start + j), s.v.data() + j * head_dim_v, head_dim_v);
                values = s.v.data();
                ldv = head_dim_v;
            }
            small_gemm({.a = s.s.data(), .lda = kKeys, .b = values, .ldb = ldv, .c = s.o.data(), .ldc = head_dim_v,
                        .m = m, .n = head_dim_v, .k = count, .accumulate = true},
                       isa);
        }

        for (int64_t r = 0; r < m; ++r) {
            const int64_t h = kv_head * group + r % group;
            float* acc = s.o.data() + r * head_dim_v;
            float running_max = s.max[static_cast<size_t>(r)], running_sum = s.sum[static_cast<size_t>(r)];
            if (params.sinks != nullptr) {
                // The sink joins the denominator only.
                const float sink = params.sinks[h];
                if (sink > running_max) {
                    const float factor = std::exp(running_max - sink);
                    k.scale(acc, factor, acc, head_dim_v);
                    running_sum *= factor;
                    running_max = sink;
                }
                running_sum += std::exp(sink - running_max);
            }
            float* y = reinterpret_cast<float*>(out.row(h, t0 + r / group));
            if (running_sum > 0.0f) {
                k.scale(acc, 1.0f / running_sum, y, head_dim_v);
            } else {
                // No visible key (and no sink): zeros rather than 0/0.
                std::fill(y, y + head_dim_v, 0.0f);
            }
        }
    }, 1);
}

}  // namespace cria::ops
