#pragma once
// Pearson's chi-square goodness-of-fit for the statistical tests: observed
// counts against expected probabilities, cells with an expected count below 5
// pooled into one, and the critical value at significance 0.001 from the
// Wilson-Hilferty approximation.

#include <cmath>
#include <map>

namespace cria::spec::testing {

struct ChiSquare {
    double statistic = 0;
    int dof = 0;
    double critical = 0;
    bool passes() const { return statistic < critical; }
};

inline ChiSquare chi_square(const std::map<int, double>& expected_p, const std::map<int, long>& observed, long n) {
    ChiSquare r;
    double pooled_e = 0, pooled_o = 0;
    int cells = 0;
    for (const auto& [token, p] : expected_p) {
        const double e = p * static_cast<double>(n);
        const auto it = observed.find(token);
        const double o = it == observed.end() ? 0.0 : static_cast<double>(it->second);
        if (e < 5.0) {
            pooled_e += e;
            pooled_o += o;
            continue;
        }
        r.statistic += (o - e) * (o - e) / e;
        ++cells;
    }
    // Tokens observed but absent from the expected support are impossible.
    for (const auto& [token, count] : observed)
        if (!expected_p.count(token)) pooled_o += static_cast<double>(count), pooled_e += 1e-9;
    if (pooled_e > 0) {
        r.statistic += (pooled_o - pooled_e) * (pooled_o - pooled_e) / std::max(pooled_e, 1e-9);
        ++cells;
    }
    r.dof = std::max(cells - 1, 1);
    const double k = r.dof, z = 3.090;  // upper 0.1% point of N(0, 1)
    r.critical = k * std::pow(1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k)), 3.0);
    return r;
}

}  // namespace cria::spec::testing
