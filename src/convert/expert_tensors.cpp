#include "expert_tensors.h"

#include <algorithm>
#include <regex>

#include "cria/core/error.h"

namespace cria::convert {

std::optional<ExpertMember> parse_expert_member(const std::string& member) {
    static const std::regex re(R"(^(?:mlp|block_sparse_moe)\.experts\.(\d{1,9})\.(gate_proj|up_proj|down_proj|w1|w2|w3)$)");
    std::smatch m;
    if (!std::regex_match(member, m, re)) return std::nullopt;
    const std::string w = m[2].str();
    // Mixtral's w1/w3/w2 are the gate/up/down projections.
    const char* role = (w == "gate_proj" || w == "w1") ? "ffn_gate_exps"
                       : (w == "up_proj" || w == "w3") ? "ffn_up_exps"
                                                      : "ffn_down_exps";
    return ExpertMember{static_cast<uint32_t>(std::stoul(m[1].str())), role};
}

void ExpertStacker::add(int layer, const ExpertMember& m, const std::string& hf_name, const StTensor& t) {
    if (m.expert >= n_expert_)
        throw Error("convert: tensor '" + hf_name + "' is expert " + std::to_string(m.expert) + ", but config.json has " +
                    std::to_string(n_expert_) + " experts");
    if (t.shape.size() != 2 || t.n_elements() == 0)
        throw Error("convert: expert tensor '" + hf_name + "' must be a non-empty matrix, it has " +
                    std::to_string(t.shape.size()) + " dimensions");
    Group& g = groups_[{layer, m.role}];
    if (g.sources.empty()) {
        g.sources.resize(n_expert_);
        g.shape = t.shape;
    }
    if (!g.sources[m.expert].empty()) throw Error("convert: expert tensor '" + hf_name + "' appears twice");
    if (t.shape != g.shape)
        throw Error("convert: expert tensor '" + hf_name + "' is [" + std::to_string(t.shape[0]) + ", " +
                    std::to_string(t.shape[1]) + "], other experts of layer " + std::to_string(layer) + " are [" +
                    std::to_string(g.shape[0]) + ", " + std::to_string(g.shape[1]) + "]");
    g.sources[m.expert] = hf_name;
}

std::vector<Planned> ExpertStacker::finish() const {
    std::vector<Planned> out;
    for (const auto& [key, g] : groups_) {
        const auto& [layer, role] = key;
        for (uint32_t e = 0; e < n_expert_; ++e)
            if (g.sources[e].empty())
                throw Error("convert: layer " + std::to_string(layer) + " has no tensor for expert " + std::to_string(e) +
                            " of " + role + " (config.json says " + std::to_string(n_expert_) + " experts)");
        Planned p;
        p.name = "blk." + std::to_string(layer) + "." + role + ".weight";
        p.stacked = g.sources;
        p.shape = {g.shape[1], g.shape[0], n_expert_};
        p.layer = layer;
        out.push_back(std::move(p));
    }
    return out;
}

bool plan_fused_experts(const Checkpoint& ckpt, const std::string& hf_name, int layer, const std::string& member,
                        uint32_t n_expert, std::vector<Planned>& plan) {
    const bool gate_up = member == "mlp.experts.gate_up_proj" || member == "mlp.experts.gate_up_proj.weight";
    const bool down = member == "mlp.experts.down_proj" || member == "mlp.experts.down_proj.weight";
    if (!gate_up && !down) return false;
    const StTensor& t = *ckpt.find(hf_name)->tensor;
    if (t.shape.size() != 3 || t.shape[0] != n_expert || t.shape[1] == 0 || t.shape[2] == 0 ||
        (gate_up && t.shape[1] % 2 != 0))
        throw Error("convert: fused expert tensor '" + hf_name + "' must be [" + std::to_string(n_expert) +
                    (gate_up ? ", 2 x F, n_embd]" : ", n_embd, F]"));
    const uint64_t rows = t.shape[1], cols = t.shape[2], parts = gate_up ? 2 : 1;
    const char* roles[2] = {gate_up ? "ffn_gate_exps" : "ffn_down_exps", "ffn_up_exps"};
    for (uint64_t part = 0; part < parts; ++part) {
        Planned p;
        p.name = "blk." + std::to_string(layer) + "." + roles[part] + ".weight";
        p.source = hf_name;
        p.shape = {cols, rows / parts, n_expert};
        p.layer = layer;
        if (gate_up)  // each expert's first half of the rows is the gate, the second the up projection
            p.transform = [rows, cols, part, n_expert](std::vector<float>& w) {
                const uint64_t half = rows / 2 * cols;
                std::vector<float> r(n_expert * half);
                for (uint64_t e = 0; e < n_expert; ++e)
                    std::copy_n(w.begin() + static_cast<ptrdiff_t>(e * 2 * half + part * half), half,
                                r.begin() + static_cast<ptrdiff_t>(e * half));
                w.swap(r);
            };
        plan.push_back(std::move(p));
    }
    return true;
}

}  // namespace cria::convert
