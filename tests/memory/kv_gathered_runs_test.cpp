// Tokens whose visible cells are not adjacent (a sequence that borrowed
// another's first cells, or whose cells interleave with another's) are
// attended over their cells gathered in position order, several tokens in
// one call when the op's index rule picks exactly each one's cells. Checked
// two ways: against the same tokens stored in order (bit for bit without a
// window, so the path the op takes does not depend on where the cells are),
// and against a plain loop over the visibility rule on random layouts of
// several sequences.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "cria/cpu/thread_pool.h"
#include "cria/memory/kv_cache.h"
#include "cria/ops/cpu_ops.h"

namespace cria::memory {
namespace {

constexpr int kDim = 32;
constexpr int kKvHeads = 2;
constexpr int kHeads = 4;  // two query heads per KV head
constexpr float kScale = 0.3f;

struct Token {
    int32_t pos;
    uint64_t seqs;
    uint32_t id;  // K, V and Q are a function of the id: equal ids, equal rows
};

const std::vector<float>& values(uint32_t id, size_t n, uint32_t salt) {
    static std::map<std::tuple<uint32_t, size_t, uint32_t>, std::vector<float>> made;  // the reference asks often
    std::vector<float>& v = made[{id, n, salt}];
    if (v.empty()) {
        std::mt19937 rng(id * 7919u + salt);
        std::normal_distribution<float> nd;
        v.resize(n);
        for (float& x : v) x = nd(rng);
    }
    return v;
}

KvCacheParams params(ElementType type, uint32_t n_swa) {
    KvCacheParams p;
    p.n_cells = 256;
    p.n_layer = 1;
    p.n_head_kv = kKvHeads;
    p.head_dim = p.head_dim_v = kDim;
    p.type_k = p.type_v = type;
    p.n_swa = n_swa;
    return p;
}

// Places, stores and attends one micro-batch; returns its outputs.
std::vector<float> decode(KvCache& c, ops::Ops& ops, const std::vector<Token>& batch) {
    const auto n = static_cast<int64_t>(batch.size());
    std::vector<int32_t> pos;
    std::vector<uint64_t> seqs;
    std::vector<float> k, v, q;
    for (const Token& t : batch) {
        pos.push_back(t.pos);
        seqs.push_back(t.seqs);
        for (auto [buf, salt, size] : {std::tuple{&k, 1u, kDim * kKvHeads}, std::tuple{&v, 2u, kDim * kKvHeads},
                                       std::tuple{&q, 3u, kDim * kHeads}}) {
            const auto& x = values(t.id, static_cast<size_t>(size), salt);
            buf->insert(buf->end(), x.begin(), x.end());
        }
    }
    EXPECT_TRUE(c.place({n, pos.data(), seqs.data()}));
    c.store(0, ops::TensorView::contiguous(ElementType::F32, k.data(), {kDim, kKvHeads, n}),
            ops::TensorView::contiguous(ElementType::F32, v.data(), {kDim, kKvHeads, n}));
    std::vector<float> out(q.size());
    ops::AttentionParams ap;
    ap.scale = kScale;
    c.attend(ops, 0, ops::TensorView::contiguous(ElementType::F32, q.data(), {kDim, kHeads, n}), ap, 0,
             ops::TensorView::contiguous(ElementType::F32, out.data(), {kDim, kHeads, n}));
    return out;
}

std::vector<Token> prompt(int32_t from, int32_t to, SeqId seq, uint32_t id0) {
    std::vector<Token> b;
    for (int32_t p = from; p < to; ++p) b.push_back({p, uint64_t{1} << seq, id0 + static_cast<uint32_t>(p)});
    return b;
}

// Sequence 0's prompt prefilled alone, and the same prompt decoded after it
// borrowed its first `lent` cells from sequence 1, whose own tokens follow
// them: each prompt token's output is the same bits.
void expect_borrowed_prompt_equals_prefill(ElementType type, uint32_t n_swa, int32_t lent, int32_t n) {
    SCOPED_TRACE(std::string(element_type_name(type)) + " window " + std::to_string(n_swa) + " lent " +
                 std::to_string(lent) + " of " + std::to_string(n));
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    KvCache alone(params(type, n_swa)), borrowed(params(type, n_swa));
    const auto want = decode(alone, ops, prompt(0, n, 0, 0));

    decode(borrowed, ops, prompt(0, lent, 1, 0));         // the shared prefix, sequence 1's
    decode(borrowed, ops, prompt(lent, lent + 5, 1, 1000));  // sequence 1 goes on
    ASSERT_TRUE(borrowed.seq_cp(1, 0, 0, lent));
    std::vector<Token> batch{{lent + 5, uint64_t{1} << 1, 2000}};  // and shares the batch
    const auto rest = prompt(lent, n, 0, 0);
    batch.insert(batch.end(), rest.begin(), rest.end());
    const auto got = decode(borrowed, ops, batch);
    const size_t row = kDim * kHeads;
    for (int32_t p = lent; p < n; ++p) {
        const float* g = got.data() + static_cast<size_t>(1 + p - lent) * row;
        const float* w = want.data() + static_cast<size_t>(p) * row;
        if (n_swa == 0) {
            EXPECT_EQ(std::memcmp(g, w, row * sizeof(float)), 0) << "position " << p;
        } else {
            // A window's run may start its key blocks elsewhere than the
            // prefill's (kv_cache.h): the same values up to float reordering.
            for (size_t i = 0; i < row; ++i) ASSERT_NEAR(g[i], w[i], 1e-5f) << "position " << p;
        }
    }
}

TEST(KvGatheredRuns, BorrowedPromptEqualsItsPrefill) {
    for (ElementType type : {ElementType::F16, ElementType::F32, ElementType::Q8_0})
        for (uint32_t n_swa : {0u, 9u})
            for (auto [lent, n] : {std::pair{1, 3}, std::pair{1, 40}, std::pair{3, 90}, std::pair{70, 150}})
                expect_borrowed_prompt_equals_prefill(type, n_swa, lent, n);
}

// One-token steps of a sequence whose later cells lie before its earlier
// ones (another sequence's cells freed below them, as when the server
// restarts a slot) read the keys in position order, as steps over cells
// stored in order do: the same bits. (Read in cell order, the sums were
// reordered, and an f16 cache's rounding of the next layers' K and V could
// turn that into 2^-11 steps: a sampled reply then depended on which slot
// had freed its cells when.)
TEST(KvGatheredRuns, StepsOverCellsOutOfPositionOrderEqualStepsInOrder) {
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    KvCache in_order(params(ElementType::F32, 0)), scattered(params(ElementType::F32, 0));
    decode(in_order, ops, prompt(0, 10, 0, 0));
    decode(scattered, ops, prompt(0, 10, 0, 0));
    decode(scattered, ops, prompt(0, 20, 1, 500));  // sequence 1 takes the next cells
    const size_t row = kDim * kHeads;
    for (int32_t p = 10; p < 30; ++p) {
        if (p == 15) ASSERT_TRUE(scattered.seq_rm(1, -1, -1));  // its cells, below sequence 0's latest, are free
        const auto want = decode(in_order, ops, prompt(p, p + 1, 0, 0));
        const auto got = decode(scattered, ops, prompt(p, p + 1, 0, 0));
        EXPECT_EQ(std::memcmp(got.data(), want.data(), row * sizeof(float)), 0) << "position " << p;
    }
}

// A plain loop over the rule: a token of sequence s at position p sees the
// cells of s at positions <= p (and > p - n_swa with a window).
struct Cell {
    int32_t pos;
    uint64_t seqs;
    uint32_t id;
};

void expect_rule(const std::vector<Cell>& cells, const std::vector<Token>& batch, const std::vector<float>& out,
                 uint32_t n_swa) {
    for (size_t t = 0; t < batch.size(); ++t) {
        const Token& tok = batch[t];
        const uint64_t s = tok.seqs & (~tok.seqs + 1);  // the first sequence decides
        const auto& q = values(tok.id, kDim * kHeads, 3);
        for (int h = 0; h < kHeads; ++h) {
            const int kvh = h / (kHeads / kKvHeads);
            std::vector<double> w;
            std::vector<const std::vector<float>*> vs;
            for (const Cell& c : cells) {
                if (!(c.seqs & s) || c.pos > tok.pos || (n_swa > 0 && tok.pos - c.pos >= static_cast<int32_t>(n_swa)))
                    continue;
                const auto& k = values(c.id, kDim * kKvHeads, 1);
                double dot = 0;
                for (int d = 0; d < kDim; ++d) dot += double(q[h * kDim + d]) * k[kvh * kDim + d];
                w.push_back(dot * kScale);
                vs.push_back(&values(c.id, kDim * kKvHeads, 2));
            }
            ASSERT_FALSE(w.empty());
            const double mx = *std::max_element(w.begin(), w.end());
            double sum = 0;
            for (double& x : w) sum += (x = std::exp(x - mx));
            for (int d = 0; d < kDim; ++d) {
                double y = 0;
                for (size_t i = 0; i < w.size(); ++i) y += w[i] / sum * (*vs[i])[kvh * kDim + d];
                ASSERT_NEAR(out[(t * kHeads + h) * kDim + d], y, 1e-5) << "token " << t << " head " << h;
            }
        }
    }
}

// Three sequences decoding in shared batches: prompts, steps, rollbacks
// (seq_rm of a tail) and prefixes borrowed from one another.
void random_layouts(uint32_t n_swa, uint32_t seed) {
    SCOPED_TRACE("window " + std::to_string(n_swa) + " seed " + std::to_string(seed));
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    KvCache c(params(ElementType::F32, n_swa));
    std::vector<Cell> cells;
    std::mt19937 rng(seed);
    int32_t next[3] = {0, 0, 0};
    uint32_t id = 1;
    for (int round = 0; round < 30; ++round) {
        const int op = static_cast<int>(rng() % 6);
        const SeqId s = static_cast<SeqId>(rng() % 3);
        if (op == 0 && next[s] > 2 && n_swa == 0) {
            // Roll back a tail (not under a window: cells it freed could be needed again).
            const int32_t from = next[s] - 1 - static_cast<int32_t>(rng() % 3);
            ASSERT_TRUE(c.seq_rm(s, from, -1));
            for (Cell& cell : cells)
                if (cell.pos >= from) cell.seqs &= ~(uint64_t{1} << s);
            next[s] = from;
            continue;
        }
        if (op == 1) {
            // Restart s on a prefix another sequence lends.
            const SeqId src = (s + 1 + static_cast<SeqId>(rng() % 2)) % 3;
            if (next[src] < 2) continue;
            const int32_t lent = 1 + static_cast<int32_t>(rng() % static_cast<uint32_t>(next[src] - 1));
            ASSERT_TRUE(c.seq_rm(s, -1, -1));
            ASSERT_TRUE(c.seq_cp(src, s, 0, lent));
            for (Cell& cell : cells) {
                cell.seqs &= ~(uint64_t{1} << s);
                if ((cell.seqs >> src & 1) && cell.pos < lent) cell.seqs |= uint64_t{1} << s;
            }
            next[s] = lent;
            continue;
        }
        // A batch: a few tokens of each sequence, in sequence order or interleaved.
        std::vector<Token> batch;
        for (SeqId q = 0; q < 3; ++q)
            for (int i = 0, m = static_cast<int>(rng() % 7); i < m; ++i) batch.push_back({next[q]++, uint64_t{1} << q, id++});
        if (batch.empty()) continue;
        if (rng() % 2) std::stable_sort(batch.begin(), batch.end(), [](const Token& a, const Token& b) { return a.pos < b.pos; });
        // A window frees, before the batch, what its sequences cannot see again.
        // (from each sequence's first position in it).
        for (SeqId q = 0; q < 3 && n_swa > 0; ++q) {
            int32_t first = -1;
            for (const Token& t : batch)
                if ((t.seqs >> q & 1) && (first < 0 || t.pos < first)) first = t.pos;
            for (Cell& cell : cells)
                if (first >= 0 && first - cell.pos >= static_cast<int32_t>(n_swa)) cell.seqs &= ~(uint64_t{1} << q);
        }
        std::erase_if(cells, [](const Cell& cell) { return cell.seqs == 0; });
        const auto out = decode(c, ops, batch);
        for (const Token& t : batch) cells.push_back({t.pos, t.seqs, t.id});
        expect_rule(cells, batch, out, n_swa);
        if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(KvGatheredRuns, RandomLayoutsFollowTheRule) {
    for (uint32_t seed : {1u, 2u, 3u, 4u}) {
        random_layouts(0, seed);
        random_layouts(5, seed);
    }
}

}  // namespace
}  // namespace cria::memory
