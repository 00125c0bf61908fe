// Rejection sampling gives exactly the target distribution, whatever the draft's.

#include <gtest/gtest.h>

#include <map>

#include "cria/core/error.h"
#include "cria/spec/verify.h"
#include "spec/chi_square.h"

namespace cria::spec {
namespace {

using sampling::Candidate;

std::vector<Candidate> dist(std::initializer_list<std::pair<int, float>> entries) {
    std::vector<Candidate> out;
    for (auto [id, p] : entries) out.push_back({id, 0.0f, p});
    return out;
}

// Draws a token from q with rng, then verifies it against p; returns the counts.
std::map<int, long> simulate(const std::vector<Candidate>& p, const std::vector<Candidate>& q, long n, uint32_t seed,
                             bool skip_residual = false) {
    sampling::Rng rng(seed);
    std::map<int, long> counts;
    for (long i = 0; i < n; ++i) {
        double u = rng.uniform_double();
        int token = q.back().id;
        for (const auto& c : q) {
            u -= c.p;
            if (u < 0) {
                token = c.id;
                break;
            }
        }
        const auto r = rejection_sample(p, q, token, rng);
        if (skip_residual && !r.accepted) {
            --i;  // a wrong verifier: retry instead of the residual
            continue;
        }
        ++counts[r.token];
    }
    return counts;
}

std::map<int, double> as_map(const std::vector<Candidate>& p) {
    std::map<int, double> m;
    for (const auto& c : p) m[c.id] = c.p;
    return m;
}

TEST(RejectionSampling, OutputFollowsTheTargetDistribution) {
    const auto p = dist({{0, 0.5f}, {1, 0.25f}, {2, 0.15f}, {3, 0.1f}});
    // Drafts that disagree with p in every way: other order, extra tokens, missing tokens.
    const std::vector<std::vector<Candidate>> drafts = {
        dist({{3, 0.7f}, {2, 0.2f}, {0, 0.1f}}),
        dist({{0, 0.25f}, {1, 0.25f}, {2, 0.25f}, {3, 0.25f}}),
        dist({{5, 0.5f}, {6, 0.3f}, {0, 0.2f}}),
        dist({{0, 0.5f}, {1, 0.25f}, {2, 0.15f}, {3, 0.1f}}),
    };
    const long n = 20000;
    uint32_t seed = 11;
    for (const auto& q : drafts) {
        const auto counts = simulate(p, q, n, seed++);
        const auto chi = testing::chi_square(as_map(p), counts, n);
        EXPECT_TRUE(chi.passes()) << "chi2 " << chi.statistic << " >= " << chi.critical << " (dof " << chi.dof << ")";
    }
}

TEST(RejectionSampling, TheTestDetectsAVerifierWithoutTheResidual) {
    // Accept-or-retry without the residual distribution is biased towards q:
    // the chi-square test must catch it (the test has power).
    const auto p = dist({{0, 0.5f}, {1, 0.25f}, {2, 0.15f}, {3, 0.1f}});
    const auto q = dist({{3, 0.7f}, {2, 0.2f}, {0, 0.1f}});
    const long n = 20000;
    const auto counts = simulate(p, q, n, 5, /*skip_residual=*/true);
    EXPECT_FALSE(testing::chi_square(as_map(p), counts, n).passes());
}

TEST(RejectionSampling, AcceptsWhenTheTargetIsAtLeastAsLikely) {
    sampling::Rng rng(1);
    const auto p = dist({{0, 0.9f}, {1, 0.1f}});
    const auto q = dist({{0, 0.5f}, {1, 0.5f}});
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(rejection_sample(p, q, 0, rng).accepted);
    // A token the target cannot produce is always rejected.
    const auto p2 = dist({{0, 1.0f}});
    for (int i = 0; i < 100; ++i) {
        const auto r = rejection_sample(p2, q, 1, rng);
        EXPECT_FALSE(r.accepted);
        EXPECT_EQ(r.token, 0);
    }
    EXPECT_THROW(rejection_sample({}, q, 0, rng), Error);
}

}  // namespace
}  // namespace cria::spec
