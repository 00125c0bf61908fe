// Which cells a micro-batch's tokens see, beyond plain causal order: a batch
// attended both ways (every cell of the sequence, the sliding window still
// looking back only) and tokens that share a position (an M-RoPE image),
// kept causal by their order. Checked against a plain loop over the rule.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cria/cpu/thread_pool.h"
#include "cria/memory/kv_cache.h"
#include "cria/ops/cpu_ops.h"

namespace cria::memory {
namespace {

constexpr int kDim = 8;

struct Cell {
    int32_t pos, order;
    std::vector<float> k, v;
};

struct Ubatch {
    std::vector<int32_t> pos, order;
    bool causal = true;
};

class Visibility {
public:
    explicit Visibility(uint32_t n_swa) : pool_(2), ops_(pool_), cache_(params(n_swa)), n_swa_(n_swa) {}

    // Places, stores and attends one micro-batch of sequence 0; checks every
    // output against the rule over all cells stored so far.
    void run(const Ubatch& u) {
        const auto n = static_cast<int64_t>(u.pos.size());
        std::vector<uint64_t> seqs(static_cast<size_t>(n), 1);
        ASSERT_TRUE(cache_.place({n, u.pos.data(), seqs.data(), u.order.data(), u.causal}));
        std::vector<float> k(static_cast<size_t>(n * kDim)), v(k.size()), q(k.size()), out(k.size());
        for (auto* b : {&k, &v, &q})
            for (float& x : *b) x = nd_(rng_);
        for (int64_t t = 0; t < n; ++t)
            cells_.push_back({u.pos[static_cast<size_t>(t)], u.order[static_cast<size_t>(t)],
                              {k.begin() + t * kDim, k.begin() + (t + 1) * kDim},
                              {v.begin() + t * kDim, v.begin() + (t + 1) * kDim}});
        cache_.store(0, ops::TensorView::contiguous(ElementType::F32, k.data(), {kDim, 1, n}),
                     ops::TensorView::contiguous(ElementType::F32, v.data(), {kDim, 1, n}));
        ops::AttentionParams ap;
        ap.scale = 0.4f;
        cache_.attend(ops_, 0, ops::TensorView::contiguous(ElementType::F32, q.data(), {kDim, 1, n}), ap, 0,
                      ops::TensorView::contiguous(ElementType::F32, out.data(), {kDim, 1, n}));
        for (int64_t t = 0; t < n; ++t) {
            const int32_t p = u.pos[static_cast<size_t>(t)], o = u.order[static_cast<size_t>(t)];
            std::vector<double> w;
            std::vector<const Cell*> seen;
            for (const Cell& c : cells_) {
                const bool before = c.pos < p || (c.pos == p && c.order <= o);
                if (u.causal && !before) continue;
                if (n_swa_ > 0 && p - c.pos >= static_cast<int32_t>(n_swa_)) continue;
                double s = 0;
                for (int d = 0; d < kDim; ++d) s += double(q[static_cast<size_t>(t * kDim + d)]) * c.k[static_cast<size_t>(d)];
                w.push_back(s * 0.4);
                seen.push_back(&c);
            }
            ASSERT_FALSE(seen.empty());
            const double mx = *std::max_element(w.begin(), w.end());
            double sum = 0;
            for (double& x : w) sum += (x = std::exp(x - mx));
            for (int d = 0; d < kDim; ++d) {
                double y = 0;
                for (size_t i = 0; i < seen.size(); ++i) y += w[i] / sum * seen[i]->v[static_cast<size_t>(d)];
                EXPECT_NEAR(out[static_cast<size_t>(t * kDim + d)], y, 1e-5) << "token " << t;
            }
        }
    }

private:
    static KvCacheParams params(uint32_t n_swa) {
        KvCacheParams p;
        p.n_cells = 64;
        p.n_layer = 1;
        p.n_head_kv = 1;
        p.head_dim = p.head_dim_v = kDim;
        p.type_k = p.type_v = ElementType::F32;
        p.n_swa = n_swa;
        return p;
    }
    cpu::ThreadPool pool_;
    ops::CpuOps ops_;
    KvCache cache_;
    uint32_t n_swa_;
    std::vector<Cell> cells_;
    std::mt19937 rng_{11};
    std::normal_distribution<float> nd_;
};

TEST(KvVisibility, ABlockAttendedBothWaysSeesItsLaterTokens) {
    Visibility v(0);
    v.run({{0, 1, 2}, {0, 0, 0}, true});              // text
    v.run({{3, 4, 5, 6}, {0, 0, 0, 0}, false});       // the image block
    v.run({{7, 8}, {0, 0}, true});                    // text after it: causal again
}

TEST(KvVisibility, BothWaysStillLooksBackOnlyAsFarAsTheWindow) {
    Visibility v(3);
    v.run({{0, 1, 2}, {0, 0, 0}, true});
    v.run({{3, 4, 5, 6}, {0, 0, 0, 0}, false});
    v.run({{7}, {0}, true});
}

TEST(KvVisibility, TokensSharingAPositionAttendInTheirOrder) {
    Visibility v(0);
    v.run({{0, 1}, {0, 0}, true});
    v.run({{2, 2, 2, 2, 2, 2}, {0, 1, 2, 3, 4, 5}, true});  // an M-RoPE image at position 2
    v.run({{2, 2}, {6, 7}, true});                          // its rest in a second micro-batch
    v.run({{5}, {0}, true});                                // text after it sees every image token
}

}  // namespace
}  // namespace cria::memory
