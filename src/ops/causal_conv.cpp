// The causal depthwise convolution with state of CpuOps (Ops::causal_conv,
// ggml_ssm_conv semantics). Tasks are blocks of channels; within a block each
// token's outputs are a few multiply-adds per channel (K taps), then the
// block's new states are the last K-1 inputs of [state | x].

#include <algorithm>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/recurrent_checks.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

constexpr int64_t kChannelBlock = 64;

}  // namespace

void CpuOps::causal_conv(const TensorView& x, const TensorView& weight, const TensorView& state, bool silu,
                         const TensorView& out) {
    check_causal_conv(x, weight, state, out);
    const int64_t channels = x.ne[0], n_tokens = x.ne[1], n_taps = weight.ne[0], n_state = n_taps - 1;
    if (n_tokens == 0 || channels == 0) return;
    const VecKernels& vk = vec_kernels();
    const int64_t n_blocks = (channels + kChannelBlock - 1) / kChannelBlock;
    pool_.parallel_for(
        n_blocks,
        [&](int64_t block, int) {
            const int64_t c0 = block * kChannelBlock, nc = std::min(kChannelBlock, channels - c0);
            // [state | x] of the block's channels, one row per channel.
            const int64_t width = n_state + n_tokens;
            std::vector<float> window(static_cast<size_t>(nc * width));
            for (int64_t c = 0; c < nc; ++c) {
                float* w = &window[static_cast<size_t>(c * width)];
                std::copy_n(state.row_f32(c0 + c), n_state, w);
                for (int64_t t = 0; t < n_tokens; ++t) w[n_state + t] = x.row_f32(t)[c0 + c];
            }
            for (int64_t t = 0; t < n_tokens; ++t) {
                float* y = out.row_f32(t) + c0;
                for (int64_t c = 0; c < nc; ++c) {
                    const float* taps = weight.row_f32(c0 + c);
                    const float* in = &window[static_cast<size_t>(c * width + t)];
                    float acc = 0.0f;
                    for (int64_t i = 0; i < n_taps; ++i) acc += taps[i] * in[i];
                    y[c] = acc;
                }
                if (silu) vk.silu(y, y, nc);
            }
            for (int64_t c = 0; c < nc; ++c)
                std::copy_n(&window[static_cast<size_t>(c * width + n_tokens)], n_state, state.row_f32(c0 + c));
        },
        1);
}

}  // namespace cria::ops
