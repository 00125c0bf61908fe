#include "model/ssm_tensors.h"

#include <string>

#include "model/ssm_block.h"

namespace cria::model {
namespace {

uint32_t ssm_key(const HParamsKeys& keys, const char* suffix, uint32_t limit) {
    const uint32_t v = keys.require_u32(suffix);
    if (v == 0 || v > limit)
        keys.fail("'" + keys.key(suffix) + "' = " + std::to_string(v) + " must be in 1.." + std::to_string(limit));
    return v;
}

}  // namespace

void read_ssm_hparams(const HParamsKeys& keys, HParams& hp, SsmKind kind) {
    // Limits far beyond real models, so that the state sizes below fit 32 bits.
    hp.ssm_conv_kernel = ssm_key(keys, "ssm.conv_kernel", 64);
    hp.ssm_inner = ssm_key(keys, "ssm.inner_size", 1u << 16);
    hp.ssm_state = ssm_key(keys, "ssm.state_size", 1024);
    hp.ssm_dt_rank = ssm_key(keys, "ssm.time_step_rank", 1u << 16);
    if (kind == SsmKind::Mamba2) {
        hp.ssm_groups = ssm_key(keys, "ssm.group_count", 1024);
        const uint32_t heads = hp.ssm_dt_rank;  // Mamba-2: time_step_rank is the number of heads
        if (hp.ssm_inner % heads != 0)
            keys.fail("'" + keys.key("ssm.inner_size") + "' (" + std::to_string(hp.ssm_inner) +
                      ") is not a multiple of the SSM heads (" + std::to_string(heads) + ")");
        if (heads % hp.ssm_groups != 0)
            keys.fail("the SSM heads (" + std::to_string(heads) + ") are not a multiple of '" +
                      keys.key("ssm.group_count") + "' (" + std::to_string(hp.ssm_groups) + ")");
        hp.recurrent_conv_floats = blocks::mamba2_conv_floats(hp);
    } else {
        hp.ssm_groups = 0;
        hp.ssm_dt_b_c_rms = keys.boolean("ssm.dt_b_c_rms", false);
        hp.recurrent_conv_floats = blocks::mamba_conv_floats(hp);
    }
    hp.recurrent_state_floats = blocks::ssm_state_floats(hp);
}

void declare_ssm_tensors(const HParams& hp, TensorTable& t, LayerWeights& lw, uint32_t layer, SsmKind kind,
                         bool conv_bias_required, bool norm_required) {
    const auto name = [layer](const char* n) { return layer_tensor(layer, n); };
    const uint64_t E = hp.n_embd, d_inner = hp.ssm_inner, N = hp.ssm_state, K = hp.ssm_conv_kernel;
    const Need conv_bias = conv_bias_required ? Need::Required : Need::Optional;
    SsmWeights& w = lw.ssm;
    if (kind == SsmKind::Mamba1) {
        const uint64_t R = hp.ssm_dt_rank;
        t.linear(name("ssm_in"), E, 2 * d_inner, &w.in);
        t.values(name("ssm_conv1d.weight"), {K, d_inner}, &w.conv);
        t.vector(name("ssm_conv1d.bias"), d_inner, &w.conv_bias, conv_bias);
        // llama.cpp multiplies only ssm_in and ssm_out by their `.scale`.
        t.linear(name("ssm_x"), d_inner, R + 2 * N, &w.x, Need::Required, ScaleUse::Ignored);
        t.linear(name("ssm_dt"), R, d_inner, &w.dt, Need::Required, ScaleUse::Ignored);
        t.values(name("ssm_a"), {N, d_inner}, &w.a);
        t.vector(name("ssm_d"), d_inner, &w.d);
    } else {
        const uint64_t H = hp.ssm_dt_rank, G = hp.ssm_groups, d_xbc = d_inner + 2 * G * N;
        t.linear(name("ssm_in"), E, 2 * d_inner + 2 * G * N + H, &w.in);
        t.values(name("ssm_conv1d.weight"), {K, d_xbc}, &w.conv);
        t.vector(name("ssm_conv1d.bias"), d_xbc, &w.conv_bias, conv_bias);
        t.vector(name("ssm_dt.bias"), H, &w.dt_bias);
        t.values(name("ssm_a"), {1, H}, &w.a);
        t.values(name("ssm_d"), {1, H}, &w.d);
        t.values(name("ssm_norm.weight"), {d_inner / G, G}, &w.norm, norm_required ? Need::Required : Need::Optional);
    }
    t.linear(name("ssm_out"), d_inner, E, &w.out);
}

}  // namespace cria::model
