#pragma once
// Mixture-of-experts checkpoints keep one tensor per expert
// (model.layers.L.mlp.experts.E.gate_proj.weight for Qwen3-MoE,
// model.layers.L.block_sparse_moe.experts.E.w1.weight for Mixtral); llama.cpp
// stacks them into one 3-D tensor per layer and role (blk.L.ffn_gate_exps,
// ffn_up_exps, ffn_down_exps: {cols, rows, n_expert}), expert e at the
// outermost index e, as its converter does (Qwen2MoeModel / LlamaModel
// modify_tensors).

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint.h"
#include "cria/convert/safetensors.h"
#include "planned_tensor.h"

namespace cria::convert {

struct ExpertMember {
    uint32_t expert;
    std::string role;  // "ffn_gate_exps", "ffn_up_exps" or "ffn_down_exps"
};

// "mlp.experts.3.gate_proj" or "block_sparse_moe.experts.3.w1" (the part of
// the name between "model.layers.L." and ".weight"); nothing for any other.
std::optional<ExpertMember> parse_expert_member(const std::string& member);

class ExpertStacker {
public:
    explicit ExpertStacker(uint32_t n_expert) : n_expert_(n_expert) {}

    // Records `hf_name` (a 2-D tensor) as expert `m.expert` of `m.role` in
    // `layer`. Throws cria::Error for an expert index past n_expert, a tensor
    // given twice, or one that is not 2-D.
    void add(int layer, const ExpertMember& m, const std::string& hf_name, const StTensor& t);

    // One stacked tensor per (layer, role) seen. Throws cria::Error when an
    // expert is missing or the experts of one tensor differ in shape.
    std::vector<Planned> finish() const;

    bool empty() const { return groups_.empty(); }

private:
    struct Group {
        std::vector<std::string> sources;  // by expert; "" while missing
        std::vector<uint64_t> shape;       // PyTorch order, from the first expert seen
    };
    uint32_t n_expert_;
    std::map<std::pair<int, std::string>, Group> groups_;
};

// Checkpoints saved with the experts already fused (transformers 5:
// mlp.experts.gate_up_proj [E, 2F, n_embd], gate rows first then up rows, and
// mlp.experts.down_proj [E, n_embd, F], with or without ".weight") map to the
// same stacked tensors, as Qwen2MoeModel.modify_tensors does. `member` is the
// name after "model.layers.<layer>."; returns false for any other member.
// Throws cria::Error for shapes that do not fit.
bool plan_fused_experts(const Checkpoint& ckpt, const std::string& hf_name, int layer, const std::string& member,
                        uint32_t n_expert, std::vector<Planned>& plan);

}  // namespace cria::convert
