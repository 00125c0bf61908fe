#pragma once
// The scale searches shared by the k-quants and the imatrix variants of the
// legacy types. Each one picks, for a group of `n` values, a scale (and for
// the "min" variants an offset) plus the integer levels L[i], minimising a
// weighted squared (or absolute) error. They follow ggml's make_*_quants
// procedures step for step -- same candidates, same tie rules, same float
// evaluation order -- because llama.cpp files quantized by cria should be the
// same bytes.
//
// Level conventions: symmetric searches return L[i] + nmax in [0, 2*nmax);
// asymmetric ones return L[i] in [0, nmax] with value = scale * L[i] - min.

#include <cstdint>

namespace cria::quant::detail {

// Groups whose largest magnitude is below this are treated as all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric levels in [-nmax, nmax-1] (stored +nmax). The first scale maps
// the value of largest magnitude to -nmax; 18 nearby scales are tried too and
// the one with the best weighted least-squares fit wins (ggml's rmse_type 1).
// `weights` null means weights x^2.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* weights);

// Symmetric levels for Q3_K's reference path: start from the plain scale,
// then up to five passes of coordinate descent on the x^2-weighted fit.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool refine);

// Asymmetric levels [0, nmax] with a non-positive offset, grid search over
// nstep+1 scales (rmin + k*rdelta + nmax)/(max-min) with a least-squares
// (scale, min) fit each; use_mad selects absolute instead of squared error.
// Returns the scale and writes -min to *neg_min. `weights` (n values) must be
// given; `aux` holds n scratch levels.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* aux, float rmin, float rdelta, int nstep, bool use_mad);

// Like make_qkx2_quants, but robust to a min that has moved close to max.
// (ggml's version also accepts null weights, meaning x^2; cria never needs it.)
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* aux, float rmin, float rdelta, int nstep, bool use_mad);

// Non-negative levels [0, nmax] for a group of (non-negative) sub-block
// scales: tries 9 scales, then refines the levels by coordinate descent.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* weights);

}  // namespace cria::quant::detail
