#include "model/ssm_block.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cria/core/error.h"
#include "model/sequence_runs.h"

namespace cria::model::blocks {
namespace {

using ops::TensorView;

// A [rows, n] view of rows [first_row, first_row + rows) of columns
// [first_col, first_col + n) of a [total, *] buffer.
TensorView rows_of(std::vector<float>& buf, int64_t total, int64_t first_row, int64_t rows, int64_t first_col,
                   int64_t n) {
    TensorView t = TensorView::contiguous(ElementType::F32, buf.data() + first_col * total + first_row, {rows, n});
    t.nb[1] = static_cast<size_t>(total) * sizeof(float);
    t.nb[2] = t.nb[3] = t.nb[1] * static_cast<size_t>(n);
    return t;
}

TensorView vec_view(const std::vector<float>& v) {
    return TensorView::contiguous(ElementType::F32, v.data(), {static_cast<int64_t>(v.size())});
}

// The convolution of every run of the micro-batch (each sequence's state
// advanced over its tokens); `before` keeps each run's state as it was, for
// the token-by-token scan of a checkpoint.
struct ConvRun {
    SequenceRun run;
    RecurrentState state;
    bool every_position = false;
    std::vector<float> before;
};

std::vector<ConvRun> convolve_runs(Step& s, uint32_t layer, std::vector<float>& in, int64_t in_total,
                                   int64_t first_row, int64_t channels, const std::vector<float>& taps) {
    const int64_t kernel = s.hp.ssm_conv_kernel;
    std::vector<ConvRun> runs;
    for (const SequenceRun& r : sequence_runs(s.in)) {
        ConvRun cr{r, s.memory.recurrent_state(layer, r.seq), s.memory.keeps_every_position(layer, r.seq), {}};
        if (cr.every_position) cr.before.assign(cr.state.conv, cr.state.conv + (kernel - 1) * channels);
        s.ops.ssm_conv(rows_of(in, in_total, first_row, channels, r.first, r.n), taps.data(), kernel, cr.state.conv,
                       rows_of(s.ws.ssm_conv, channels, 0, channels, r.first, r.n));
        runs.push_back(std::move(cr));
    }
    return runs;
}

// The conv state after token t of a run: the last K-1 inputs of [before | x_0..x_t].
void conv_state_after(const ConvRun& cr, const std::vector<float>& in, int64_t in_total, int64_t first_row,
                      int64_t channels, int64_t kernel, int64_t t, float* dst) {
    const int64_t n_prev = kernel - 1;
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < n_prev; ++i) {
            const int64_t j = t + 1 + i;  // index into [before (n_prev) | inputs]
            dst[c * n_prev + i] = j < n_prev ? cr.before[static_cast<size_t>(c * n_prev + j)]
                                             : in[static_cast<size_t>((cr.run.first + j - n_prev) * in_total + first_row + c)];
        }
}

// Runs `scan(first, n)` over each run: in one call, or token by token with
// the state recorded after each position when the memory keeps them.
template <class Scan>
void scan_runs(Step& s, uint32_t layer, const std::vector<ConvRun>& runs, const std::vector<float>& in,
               int64_t in_total, int64_t first_row, int64_t channels, Scan&& scan) {
    const int64_t kernel = s.hp.ssm_conv_kernel;
    for (const ConvRun& cr : runs) {
        if (!cr.every_position) {
            scan(cr, cr.run.first, cr.run.n);
            continue;
        }
        // The final conv state was written by the convolution; rebuild each
        // position's for the record, and put the final one back at the end.
        std::vector<float> final_conv(cr.state.conv, cr.state.conv + (kernel - 1) * channels);
        for (int64_t t = 0; t < cr.run.n; ++t) {
            scan(cr, cr.run.first + t, 1);
            conv_state_after(cr, in, in_total, first_row, channels, kernel, t, cr.state.conv);
            s.memory.record_position(layer, cr.run.seq, s.in.positions[cr.run.first + t]);
        }
        std::copy(final_conv.begin(), final_conv.end(), cr.state.conv);
    }
}

}  // namespace

uint32_t mamba_conv_floats(const HParams& hp) { return (hp.ssm_conv_kernel - 1) * hp.ssm_inner; }
uint32_t mamba2_conv_floats(const HParams& hp) {
    return (hp.ssm_conv_kernel - 1) * (hp.ssm_inner + 2 * hp.ssm_groups * hp.ssm_state);
}
uint32_t ssm_state_floats(const HParams& hp) { return hp.ssm_state * hp.ssm_inner; }

void mamba_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const SsmWeights& w = s.w.layers[layer].ssm;
    Workspace& ws = s.ws;
    const int64_t n = s.n, d_inner = hp.ssm_inner, N = hp.ssm_state, R = hp.ssm_dt_rank;

    const TensorView x = view(ws.x, hp.n_embd, n), h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, s.w.layers[layer].attn_norm.data(), hp.norm_rms_eps, h);
    linear(s, w.in, h, view(ws.ssm_proj, 2 * d_inner, n));  // [x | z]

    const std::vector<ConvRun> runs = convolve_runs(s, layer, ws.ssm_proj, 2 * d_inner, 0, d_inner, w.conv);
    const TensorView xc = view(ws.ssm_conv, d_inner, n);
    s.ops.add(xc, vec_view(w.conv_bias), xc);
    s.ops.silu(xc, xc);

    const int64_t n_xdb = R + 2 * N;
    linear(s, w.x, xc, view(ws.ssm_xdb, n_xdb, n));
    const TensorView dt_r = rows_of(ws.ssm_xdb, n_xdb, 0, R, 0, n);
    const TensorView b = rows_of(ws.ssm_xdb, n_xdb, R, N, 0, n), c = rows_of(ws.ssm_xdb, n_xdb, R + N, N, 0, n);
    if (hp.ssm_dt_b_c_rms || !w.dt_norm.empty()) {
        const auto weight = [](const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
        s.ops.rms_norm(dt_r, weight(w.dt_norm), hp.norm_rms_eps, dt_r);
        s.ops.rms_norm(b, weight(w.b_norm), hp.norm_rms_eps, b);
        s.ops.rms_norm(c, weight(w.c_norm), hp.norm_rms_eps, c);
    }
    // ssm_dt reads a strided slice: copy dt_r out first (matmul takes dense inputs).
    std::vector<float>& dt_in = ws.ssm_y;  // free until the scan
    for (int64_t t = 0; t < n; ++t)
        std::memcpy(dt_in.data() + t * R, ws.ssm_xdb.data() + t * n_xdb, static_cast<size_t>(R) * sizeof(float));
    linear(s, w.dt, view(dt_in, R, n), view(ws.ssm_dt, d_inner, n));

    const ops::SsmScanParams p{N, 1, d_inner, 1, false};
    scan_runs(s, layer, runs, ws.ssm_proj, 2 * d_inner, 0, d_inner, [&](const ConvRun& cr, int64_t first, int64_t m) {
        s.ops.ssm_scan(rows_of(ws.ssm_conv, d_inner, 0, d_inner, first, m), rows_of(ws.ssm_dt, d_inner, 0, d_inner, first, m),
                       w.a.data(), rows_of(ws.ssm_xdb, n_xdb, R, N, first, m), rows_of(ws.ssm_xdb, n_xdb, R + N, N, first, m),
                       p, cr.state.ssm, rows_of(ws.ssm_y, d_inner, 0, d_inner, first, m));
    });

    const TensorView y = view(ws.ssm_y, d_inner, n);
    s.ops.mul(xc, vec_view(w.d), xc);  // xc is no longer needed as such: D ⊙ xc
    s.ops.add(y, xc, y);
    s.ops.swiglu(rows_of(ws.ssm_proj, 2 * d_inner, d_inner, d_inner, 0, n), y, y);  // y ⊙ silu(z)
    const TensorView o = view(ws.o, hp.n_embd, n);
    linear(s, w.out, y, o);
    if (hp.residual_scale != 0.0f) s.ops.scale(o, hp.residual_scale, o);  // granitehybrid
    s.ops.add(x, o, x);
}

void mamba2_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const TensorView x = view(s.ws.x, hp.n_embd, s.n), h = view(s.ws.h, hp.n_embd, s.n);
    s.ops.rms_norm(x, s.w.layers[layer].attn_norm.data(), hp.norm_rms_eps, h);
    mamba2_mixer(s, layer);
    const TensorView o = view(s.ws.o, hp.n_embd, s.n);
    if (hp.residual_scale != 0.0f) s.ops.scale(o, hp.residual_scale, o);  // granitehybrid
    s.ops.add(x, o, x);
}

void mamba2_mixer(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const SsmWeights& w = s.w.layers[layer].ssm;
    Workspace& ws = s.ws;
    const int64_t n = s.n, d_inner = hp.ssm_inner, N = hp.ssm_state, H = hp.ssm_dt_rank, G = hp.ssm_groups;
    const int64_t P = d_inner / H, gn = G * N, d_xbc = d_inner + 2 * gn, d_proj = 2 * d_inner + 2 * gn + H;

    const TensorView h = view(ws.h, hp.n_embd, n);
    linear(s, w.in, h, view(ws.ssm_proj, d_proj, n));  // [z | xBC | dt]

    const std::vector<ConvRun> runs = convolve_runs(s, layer, ws.ssm_proj, d_proj, d_inner, d_xbc, w.conv);
    const TensorView xbc = view(ws.ssm_conv, d_xbc, n);
    if (!w.conv_bias.empty()) s.ops.add(xbc, vec_view(w.conv_bias), xbc);
    s.ops.silu(xbc, xbc);
    const TensorView dt = view(ws.ssm_dt, H, n);
    s.ops.add(rows_of(ws.ssm_proj, d_proj, d_inner + d_xbc, H, 0, n), vec_view(w.dt_bias), dt);

    const ops::SsmScanParams p{N, P, H, G, true};
    scan_runs(s, layer, runs, ws.ssm_proj, d_proj, d_inner, d_xbc, [&](const ConvRun& cr, int64_t first, int64_t m) {
        s.ops.ssm_scan(rows_of(ws.ssm_conv, d_xbc, 0, d_inner, first, m), rows_of(ws.ssm_dt, H, 0, H, first, m),
                       w.a.data(), rows_of(ws.ssm_conv, d_xbc, d_inner, gn, first, m),
                       rows_of(ws.ssm_conv, d_xbc, d_inner + gn, gn, first, m), p, cr.state.ssm,
                       rows_of(ws.ssm_y, d_inner, 0, d_inner, first, m));
    });

    // y += D ⊙ x, D one value per head (spread over the head's channels).
    std::vector<float> d_channels(static_cast<size_t>(d_inner));
    for (int64_t c = 0; c < d_inner; ++c) d_channels[static_cast<size_t>(c)] = w.d[static_cast<size_t>(c / P)];
    const TensorView xs = rows_of(ws.ssm_conv, d_xbc, 0, d_inner, 0, n);
    s.ops.mul(xs, vec_view(d_channels), xs);
    const TensorView y = view(ws.ssm_y, d_inner, n);
    s.ops.add(y, xs, y);
    s.ops.swiglu(rows_of(ws.ssm_proj, d_proj, 0, d_inner, 0, n), y, y);  // y ⊙ silu(z)
    if (!w.norm.empty()) {
        // RMS over each group of d_inner / G channels, then the per-channel weights.
        s.ops.rms_norm(view(ws.ssm_y, d_inner / G, G * n), nullptr, hp.norm_rms_eps, view(ws.ssm_y, d_inner / G, G * n));
        s.ops.mul(y, vec_view(w.norm), y);
    }
    linear(s, w.out, y, view(ws.o, hp.n_embd, n));
}

void shortconv_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const SsmWeights& w = s.w.layers[layer].ssm;
    Workspace& ws = s.ws;
    const int64_t n = s.n, E = hp.n_embd;

    const TensorView x = view(ws.x, E, n), h = view(ws.h, E, n);
    s.ops.rms_norm(x, s.w.layers[layer].attn_norm.data(), hp.norm_rms_eps, h);
    linear(s, w.in, h, view(ws.ssm_proj, 3 * E, n));  // [B | C | x]
    // B ⊙ x, the convolution's input (and what its state keeps), into ws.ssm_y.
    const TensorView bx = view(ws.ssm_y, E, n);
    s.ops.mul(rows_of(ws.ssm_proj, 3 * E, 0, E, 0, n), rows_of(ws.ssm_proj, 3 * E, 2 * E, E, 0, n), bx);
    const std::vector<ConvRun> runs = convolve_runs(s, layer, ws.ssm_y, E, 0, E, w.conv);
    // No scan: only the convolution state is recorded per position.
    scan_runs(s, layer, runs, ws.ssm_y, E, 0, E, [](const ConvRun&, int64_t, int64_t) {});
    const TensorView y = view(ws.ssm_conv, E, n);
    s.ops.mul(rows_of(ws.ssm_proj, 3 * E, E, E, 0, n), y, y);  // C ⊙ conv
    const TensorView o = view(ws.o, E, n);
    linear(s, w.out, y, o);
    s.ops.add(x, o, x);
}

}  // namespace cria::model::blocks
