#include "gpt_oss_tensors.h"

#include "cria/core/error.h"
#include "mxfp4_repack.h"

namespace cria::convert {
namespace {

std::string shape_text(const std::vector<uint64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

std::string block_name(int layer, const char* role, const char* suffix) {
    return "blk." + std::to_string(layer) + "." + role + "." + suffix;
}

void require(bool ok, const std::string& hf_name, const std::string& what) {
    if (!ok) throw Error("convert: gpt-oss tensor '" + hf_name + "' " + what);
}

void require_float(const StTensor& t, const std::string& hf_name) {
    require(t.dtype == StDtype::F32 || t.dtype == StDtype::F16 || t.dtype == StDtype::BF16 || t.dtype == StDtype::F64,
            hf_name, std::string("has dtype ") + st_dtype_name(t.dtype) + " (need F32, F16 or BF16)");
}

// MXFP4 experts: `blocks` [E, rows, n_blocks, 16] u8 and its `_scales`
// partner [E, rows, n_blocks] u8. Gate/up rows are interleaved (parts = 2).
void plan_mxfp4(const Checkpoint& ckpt, const std::string& hf_name, int layer, uint32_t n_expert,
                const std::vector<const char*>& roles, std::vector<Planned>& plan) {
    const Checkpoint::Entry& blocks = *ckpt.find(hf_name);
    const std::string scales_name = hf_name.substr(0, hf_name.size() - 7) + "_scales";
    const Checkpoint::Entry* scales = ckpt.find(scales_name);
    require(scales != nullptr, hf_name, "has no '" + scales_name + "' beside it");
    const StTensor& b = *blocks.tensor;
    const StTensor& s = *scales->tensor;
    require(b.dtype == StDtype::U8 && s.dtype == StDtype::U8, hf_name, "and its scales must be U8");
    require(b.shape.size() == 4 && b.shape[0] == n_expert && b.shape[3] == kMxfp4PackedBytes && b.shape[1] > 0 &&
                b.shape[2] > 0,
            hf_name, "is " + shape_text(b.shape) + ", need [" + std::to_string(n_expert) + ", rows, blocks, 16]");
    require(s.shape == std::vector<uint64_t>{b.shape[0], b.shape[1], b.shape[2]}, scales_name,
            "is " + shape_text(s.shape) + ", need " + shape_text({b.shape[0], b.shape[1], b.shape[2]}));
    const uint64_t parts = roles.size(), rows = b.shape[1], n_blocks = b.shape[2];
    require(rows % parts == 0, hf_name, "has an odd number of rows for its gate and up halves");
    for (uint64_t part = 0; part < parts; ++part) {
        Planned p;
        p.name = block_name(layer, roles[part], "weight");
        p.shape = {n_blocks * kMxfp4BlockValues, rows / parts, n_expert};
        p.layer = layer;
        p.raw_type = ElementType::MXFP4;
        const SafetensorsFile* bf = blocks.file;
        const SafetensorsFile* sf = scales->file;
        const StTensor* bt = blocks.tensor;
        const StTensor* st = scales->tensor;
        p.raw = [bf, sf, bt, st, n_expert, rows, n_blocks, part, parts]() {
            return repack_mxfp4_rows(bf->data(*bt), sf->data(*st), n_expert, rows, n_blocks, part, parts);
        };
        plan.push_back(std::move(p));
    }
}

// bf16 experts stored input-major: [E, in, out]; llama.cpp transposes each
// expert to [out, in] and, for gate_up, keeps every other output row.
void plan_dense_experts(const Checkpoint& ckpt, const std::string& hf_name, int layer, uint32_t n_expert,
                        const std::vector<const char*>& roles, std::vector<Planned>& plan) {
    const StTensor& t = *ckpt.find(hf_name)->tensor;
    require_float(t, hf_name);
    require(t.shape.size() == 3 && t.shape[0] == n_expert && t.shape[1] > 0 && t.shape[2] > 0, hf_name,
            "is " + shape_text(t.shape) + ", need [" + std::to_string(n_expert) + ", in, out]");
    const uint64_t parts = roles.size(), in = t.shape[1], out = t.shape[2];
    require(out % parts == 0, hf_name, "has an odd number of outputs for its gate and up halves");
    for (uint64_t part = 0; part < parts; ++part) {
        Planned p;
        p.name = block_name(layer, roles[part], "weight");
        p.source = hf_name;
        p.shape = {in, out / parts, n_expert};
        p.layer = layer;
        p.transform = [n_expert, in, out, part, parts](std::vector<float>& w) {
            const uint64_t rows = out / parts;
            std::vector<float> r(n_expert * rows * in);
            for (uint64_t e = 0; e < n_expert; ++e)
                for (uint64_t o = 0; o < rows; ++o)
                    for (uint64_t i = 0; i < in; ++i)
                        r[(e * rows + o) * in + i] = w[(e * in + i) * out + o * parts + part];
            w.swap(r);
        };
        plan.push_back(std::move(p));
    }
}

// Expert biases [E, out]: gate_up's even columns are the gate's, odd the up's.
void plan_expert_bias(const Checkpoint& ckpt, const std::string& hf_name, int layer, uint32_t n_expert,
                      const std::vector<const char*>& roles, std::vector<Planned>& plan) {
    const StTensor& t = *ckpt.find(hf_name)->tensor;
    require_float(t, hf_name);
    require(t.shape.size() == 2 && t.shape[0] == n_expert && t.shape[1] > 0, hf_name,
            "is " + shape_text(t.shape) + ", need [" + std::to_string(n_expert) + ", n]");
    const uint64_t parts = roles.size(), out = t.shape[1];
    require(out % parts == 0, hf_name, "has an odd number of values for its gate and up halves");
    for (uint64_t part = 0; part < parts; ++part) {
        Planned p;
        p.name = block_name(layer, roles[part], "bias");
        p.source = hf_name;
        p.shape = {out / parts, n_expert};
        p.layer = layer;
        p.is_bias = true;
        if (parts > 1)
            p.transform = [part, parts](std::vector<float>& w) {
                std::vector<float> r;
                r.reserve(w.size() / parts);
                for (size_t i = part; i < w.size(); i += parts) r.push_back(w[i]);
                w.swap(r);
            };
        plan.push_back(std::move(p));
    }
}

}  // namespace

bool plan_gpt_oss_tensor(const Checkpoint& ckpt, const std::string& hf_name, int layer, const std::string& member,
                         uint32_t n_expert, std::vector<Planned>& plan) {
    const std::vector<const char*> gate_up = {"ffn_gate_exps", "ffn_up_exps"}, down = {"ffn_down_exps"};
    if (member == "mlp.experts.gate_up_proj_blocks") plan_mxfp4(ckpt, hf_name, layer, n_expert, gate_up, plan);
    else if (member == "mlp.experts.down_proj_blocks") plan_mxfp4(ckpt, hf_name, layer, n_expert, down, plan);
    else if (member == "mlp.experts.gate_up_proj_scales" || member == "mlp.experts.down_proj_scales")
        // Written with their blocks; a scales tensor alone is an error.
        require(ckpt.find(hf_name.substr(0, hf_name.size() - 7) + "_blocks") != nullptr, hf_name,
                "has no '_blocks' tensor beside it");
    else if (member == "mlp.experts.gate_up_proj") plan_dense_experts(ckpt, hf_name, layer, n_expert, gate_up, plan);
    else if (member == "mlp.experts.down_proj") plan_dense_experts(ckpt, hf_name, layer, n_expert, down, plan);
    else if (member == "mlp.experts.gate_up_proj_bias") plan_expert_bias(ckpt, hf_name, layer, n_expert, gate_up, plan);
    else if (member == "mlp.experts.down_proj_bias") plan_expert_bias(ckpt, hf_name, layer, n_expert, down, plan);
    else if (member == "self_attn.sinks") {
        const StTensor& t = *ckpt.find(hf_name)->tensor;
        require_float(t, hf_name);
        require(t.shape.size() == 1 && t.shape[0] > 0, hf_name, "must be a vector (one sink per head)");
        Planned p;
        p.name = block_name(layer, "attn_sinks", "weight");
        p.source = hf_name;
        p.shape = {t.shape[0]};
        p.layer = layer;
        plan.push_back(std::move(p));
    } else {
        return false;
    }
    return true;
}

}  // namespace cria::convert
