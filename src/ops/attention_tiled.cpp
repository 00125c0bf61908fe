// Tiled (flash-style) attention for prompt processing. A task takes a tile
// of consecutive query tokens and one KV head; its rows are every (query
// head of that KV head's group, token) pair, head by head, so M = group x
// tokens rows share each key and value block. The tile's queries are
// transposed once (Q^T, head_dim x M, each head's tokens one strided matrix
// for ops::transpose). Keys are visited in blocks of kKeys, each block's keys
// and values converted to f32 once for all heads; per block and head, only
// the tokens from the first to the last that see a key of it take part:
//   S^T = K Q^T   the block's keys (no transpose) times Q^T (already
//                 multiplied by the scale), one small matrix product, keys x
//                 rows;
//   softmax       online, per row, in vector lanes down the key rows of S^T
//                 (VecKernels::softmax_key_block: scale, mask, running
//                 maximum and sum, exp; no horizontal reductions);
//   O = f O + P V one small matrix product reading P^T as A's transpose,
//                 which also rescales each row's output by its factor f
//                 (where its maximum grew).
// Blocks that no row of the tile can see are never visited, and the mask is
// applied only to blocks that some row sees in part (the causal diagonal,
// window edges): the others are used as computed.
//
// Key blocks start at multiples of kKeys in the cache (not at a row's first
// visible key), and a row's scores, maxima, sums and products never depend on
// the other rows of its tile: small_gemm's elements and softmax_key_block's
// columns are each computed alone, and keys a row cannot see (in a block
// where it takes part) are -inf scores, probability 0, which add exact
// zeros. Each output row is computed the same way whatever tile or thread
// handles it, so the tile size may follow the number of threads and results
// are still bit-identical for any thread count.

#include "ops/attention_tiled.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "cria/quant/quantize.h"
#include "ops/small_gemm.h"
#include "ops/transpose.h"
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

struct TileScratch {
    std::vector<float> qt;        // head_dim x M: the tile's queries, transposed
    std::vector<float> k;         // kKeys x head_dim: the key block in f32
    std::vector<float> v;         // kKeys x head_dim_v: the value block in f32
    std::vector<float> st;        // kKeys x M: scores, then probabilities, key-major
    std::vector<float> o;         // M x head_dim_v: unnormalised outputs
    std::vector<float> max, sum;  // per row: running maximum and denominator
    std::vector<float> factor;    // per row: the block's rescaling of o
    std::vector<float> lo_in_block, hi_in_block;  // per row: visible keys within a masked block
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
    // F32 keys and values are multiplied in place when their rows are float-aligned.
    const auto in_place = [](const TensorView& c) {
        return c.type == ElementType::F32 && c.nb[1] % sizeof(float) == 0 && c.nb[2] % sizeof(float) == 0 &&
               reinterpret_cast<uintptr_t>(c.data) % alignof(float) == 0;
    };
    const bool k_in_place = in_place(kc), v_in_place = in_place(vc);
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
        const int64_t m = nt * group;  // row r: token t0 + r % nt, head kv_head * group + r / nt
        const int64_t ld = max_rows;   // of qt and st
        TileScratch& s = scratch[static_cast<size_t>(thread)];
        s.qt.resize(static_cast<size_t>(head_dim * ld));
        s.k.resize(static_cast<size_t>(kKeys * head_dim));
        s.v.resize(static_cast<size_t>(kKeys * head_dim_v));
        s.st.resize(static_cast<size_t>(kKeys * ld));
        s.o.assign(static_cast<size_t>(m * head_dim_v), 0.0f);
        s.max.assign(static_cast<size_t>(m), -std::numeric_limits<float>::infinity());
        s.sum.assign(static_cast<size_t>(m), 0.0f);
        s.factor.resize(static_cast<size_t>(m));
        s.lo_in_block.resize(static_cast<size_t>(nt));
        s.hi_in_block.resize(static_cast<size_t>(nt));
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
        // Q^T: the score product reads a run of rows per head_dim index.
        // Rows head by head, so each head's tokens are one strided matrix.
        for (int64_t g = 0; g < group; ++g) {
            const char* rows = q.row(kv_head * group + g, t0);
            if (q.nb[2] % sizeof(float) == 0 && reinterpret_cast<uintptr_t>(rows) % alignof(float) == 0) {
                transpose({.src = reinterpret_cast<const float*>(rows), .ld_src = static_cast<int64_t>(q.nb[2] / sizeof(float)),
                           .dst = s.qt.data() + g * nt, .ld_dst = ld, .rows = head_dim, .cols = nt},
                          isa);
            } else {
                for (int64_t i = 0; i < nt; ++i) {
                    const auto* src = reinterpret_cast<const float*>(q.row(kv_head * group + g, t0 + i));
                    for (int64_t d = 0; d < head_dim; ++d) s.qt[static_cast<size_t>(d * ld + g * nt + i)] = src[d];
                }
            }
        }
        // The scale goes into the queries, once per tile, rather than into
        // every score of every key block.
        for (int64_t d = 0; d < head_dim; ++d) k.scale(s.qt.data() + d * ld, params.scale, s.qt.data() + d * ld, m);

        for (int64_t start = first / kKeys * kKeys; start <= last; start += kKeys) {
            const int64_t count = std::min(kKeys, last + 1 - start);
            const int64_t end = start + count - 1;
            // Tokens [t_lo, t_hi] are those between the first and the last
            // that see a key of the block (the others skip it: it would add
            // exact zeros); all_see_all when each of them sees every key.
            int64_t t_lo = nt, t_hi = -1;
            bool all_see_all = true;
            for (int64_t i = 0; i < nt; ++i) {
                const int64_t lo = s.lo[static_cast<size_t>(i)], hi = s.hi[static_cast<size_t>(i)];
                if (lo <= end && hi >= start) {
                    t_lo = std::min(t_lo, i);
                    t_hi = i;
                }
                if (lo > start || hi < end) all_see_all = false;
            }
            if (t_hi < 0) continue;  // a gap between windows of different tokens
            const int64_t rows = t_hi - t_lo + 1;  // of each head
            if (!all_see_all) {
                for (int64_t i = t_lo; i <= t_hi; ++i) {
                    // Clamped to [-1, count]: small integers, exact as floats.
                    s.lo_in_block[static_cast<size_t>(i)] = static_cast<float>(std::clamp<int64_t>(s.lo[static_cast<size_t>(i)] - start, -1, count));
                    s.hi_in_block[static_cast<size_t>(i)] = static_cast<float>(std::clamp<int64_t>(s.hi[static_cast<size_t>(i)] - start, -1, count));
                }
            }
            if (start + kKeys <= last) {
                const int64_t next = std::min(kKeys, last + 1 - (start + kKeys));
                if (!k_in_place) prefetch_rows(kc, kv_head, start + kKeys, next, k_row_bytes);
                if (!v_in_place) prefetch_rows(vc, kv_head, start + kKeys, next, v_row_bytes);
            }

            // The block's keys and values in f32, shared by the tile's heads.
            const float* keys = reinterpret_cast<const float*>(kc.row(kv_head, start));
            int64_t ldk = static_cast<int64_t>(kc.nb[2] / sizeof(float));
            if (!k_in_place) {
                for (int64_t j = 0; j < count; ++j)
                    row_to_f32(k, kc.type, kc.row(kv_head, start + j), s.k.data() + j * head_dim, head_dim);
                keys = s.k.data();
                ldk = head_dim;
            }
            const float* values = reinterpret_cast<const float*>(vc.row(kv_head, start));
            int64_t ldv = static_cast<int64_t>(vc.nb[2] / sizeof(float));
            if (!v_in_place) {
                for (int64_t j = 0; j < count; ++j)
                    row_to_f32(k, vc.type, vc.row(kv_head, start + j), s.v.data() + j * head_dim_v, head_dim_v);
                values = s.v.data();
                ldv = head_dim_v;
            }

            for (int64_t g = 0; g < group; ++g) {
                const int64_t r_lo = g * nt + t_lo;
                // S^T = K Q^T: keys x this head's rows.
                float* st = s.st.data() + r_lo;
                small_gemm({.a = keys, .lda = ldk, .b = s.qt.data() + r_lo, .ldb = ld, .c = st, .ldc = ld, .m = count,
                            .n = rows, .k = head_dim},
                           isa);
                if (params.softcap > 0.0f) {
                    for (int64_t j = 0; j < count; ++j)
                        for (int64_t r = 0; r < rows; ++r) {
                            float& x = st[j * ld + r];
                            x = params.softcap * std::tanh(x / params.softcap);
                        }
                }
                k.softmax_key_block(st, ld, count, rows, 1.0f, all_see_all ? nullptr : s.lo_in_block.data() + t_lo,
                                    all_see_all ? nullptr : s.hi_in_block.data() + t_lo, s.max.data() + r_lo,
                                    s.sum.data() + r_lo, s.factor.data() + r_lo);
                // O = factor O + P V (what was accumulated rescaled where a
                // row's maximum grew): P^T is st (keys x rows).
                small_gemm({.a = st, .lda = ld, .b = values, .ldb = ldv, .c = s.o.data() + r_lo * head_dim_v,
                            .ldc = head_dim_v, .m = rows, .n = head_dim_v, .k = count, .accumulate = true,
                            .a_transposed = true, .c_row_scale = s.factor.data() + r_lo},
                           isa);
            }
        }

        for (int64_t r = 0; r < m; ++r) {
            const int64_t h = kv_head * group + r / nt;
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
            float* y = reinterpret_cast<float*>(out.row(h, t0 + r % nt));
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
