// The per-tensor type rules of llama.cpp's llama-quant.cpp, restated for the
// file types cria writes (the IQ1/IQ2/IQ3 recipes are left out: their block
// formats are not implemented in cria_quant).

#include "cria/quantizer/type_mix.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "cria/core/error.h"

namespace cria::quantizer {
namespace {

using E = ElementType;
using F = FileType;

enum class Category { TokenEmbd, AttnQ, AttnV, AttnK, AttnQkv, AttnKvB, AttnOutput, FfnUp, FfnGate, FfnDown, Output, Other };

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

bool is_token_embd(std::string_view name) { return name == "token_embd.weight" || name == "per_layer_token_embd.weight"; }

Category category_of(std::string_view name) {
    if (name == "output.weight") return Category::Output;
    if (is_token_embd(name)) return Category::TokenEmbd;
    if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
    if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
    if (contains(name, "attn_v.weight")) return Category::AttnV;
    if (contains(name, "attn_k.weight")) return Category::AttnK;
    if (contains(name, "attn_q.weight")) return Category::AttnQ;
    if (contains(name, "attn_output.weight")) return Category::AttnOutput;
    if (contains(name, "ffn_up")) return Category::FfnUp;
    if (contains(name, "ffn_gate")) return Category::FfnGate;
    if (contains(name, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

// attn_v-like tensors are the most sensitive to quantization.
bool is_attn_v_like(Category c) { return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB; }

// ggml_n_dims: trailing dimensions of extent 1 do not count.
int n_dims(const gguf::TensorInfo& t) {
    for (int d = gguf::kMaxDims - 1; d >= 1; --d)
        if (t.ne[static_cast<size_t>(d)] > 1) return d + 1;
    return 1;
}

uint32_t block_size(E t) {
    const ElementTypeInfo* info = element_type_info(t);
    return info ? info->block_size : 1;
}

bool is_quantized(E t) {
    const ElementTypeInfo* info = element_type_info(t);
    return info && info->quantized;
}

// A few more bits for the first and last eighth of the layers and every third
// layer in between: llama.cpp's use_more_bits.
bool use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

// Layer of a tensor named "blk.N....", for mixtures of experts whose expert
// tensors are not in layer order.
int layer_from_name(const std::string& name, int n_layer) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1)
        throw Error("quantize: cannot tell the layer of tensor '" + name + "'");
    if (layer < 0 || layer >= n_layer)
        throw Error("quantize: tensor '" + name + "' is in layer " + std::to_string(layer) + ", but the model has " +
                    std::to_string(n_layer));
    return layer;
}

struct MixState {
    const ModelFacts& facts;
    const MixOptions& options;
    bool tied_embeddings = true;  // until output.weight is seen
    bool is_70b = false;
    int n_attention_wv = 0, i_attention_wv = 0;
    int n_ffn = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;

    std::pair<int, int> layer_info(int counter, const std::string& name) const {
        const int n_expert = std::max<int>(1, static_cast<int>(facts.n_expert));
        if (n_expert > 1) return {layer_from_name(name, n_ffn), n_ffn};
        return {counter, n_ffn};
    }

    // llama_tensor_get_type_impl: the mixture rules proper.
    E mix_type(E new_type, const gguf::TensorInfo& tensor, Category cat) {
        const F ftype = options.file_type;
        const uint32_t gqa = facts.n_gqa();
        const bool falcon = facts.arch == "falcon";
        if (cat == Category::Output || (tied_embeddings && cat == Category::TokenEmbd)) {
            // The output projection (or the embedding that doubles as it) decides
            // every token: it keeps at least 6 bits.
            if (options.output_tensor_type) return *options.output_tensor_type;
            if (ftype == F::MOSTLY_MXFP4_MOE) return E::Q8_0;
            if (falcon || tensor.ne[0] % block_size(new_type) != 0) return E::Q8_0;
            return new_type != E::Q8_0 ? E::Q6_K : new_type;
        }
        if (ftype == F::MOSTLY_MXFP4_MOE) {
            // Expert tensors (3-D) become MXFP4, everything else Q8_0. BailingMoE3's
            // MLA projections are 3-D too, so there only the expert FFN roles count.
            const bool expert_role = cat == Category::FfnUp || cat == Category::FfnGate || cat == Category::FfnDown;
            return tensor.ne[2] > 1 && (facts.arch != "bailingmoe3" || expert_role) ? E::MXFP4 : E::Q8_0;
        }
        if (cat == Category::TokenEmbd) {
            if (options.token_embedding_type) return *options.token_embedding_type;
            return new_type;
        }
        if (is_attn_v_like(cat)) {
            if (ftype == F::MOSTLY_Q2_K) new_type = gqa >= 4 ? E::Q4_K : E::Q3_K;
            else if (ftype == F::MOSTLY_Q2_K_S && gqa >= 4) new_type = E::Q4_K;
            else if (ftype == F::MOSTLY_Q3_K_M) new_type = i_attention_wv < 2 ? E::Q5_K : E::Q4_K;
            else if (ftype == F::MOSTLY_Q3_K_L) new_type = E::Q5_K;
            else if ((ftype == F::MOSTLY_IQ4_NL || ftype == F::MOSTLY_IQ4_XS) && gqa >= 4) new_type = E::Q5_K;
            else if ((ftype == F::MOSTLY_Q4_K_M || ftype == F::MOSTLY_Q5_K_M) &&
                     use_more_bits(i_attention_wv, n_attention_wv))
                new_type = E::Q6_K;
            else if (ftype == F::MOSTLY_Q4_K_S && i_attention_wv < 4) new_type = E::Q5_K;
            // Llama-2/3 70B: 8 query heads share each V head, so V is small; spend bits there.
            if (is_70b && (new_type == E::Q3_K || new_type == E::Q4_K)) new_type = E::Q5_K;
            if (facts.n_expert == 8) new_type = E::Q8_0;
            ++i_attention_wv;
            return new_type;
        }
        if (cat == Category::AttnK) return facts.n_expert == 8 ? E::Q8_0 : new_type;
        if (cat == Category::FfnDown) {
            auto [i_layer, n_layer] = layer_info(i_ffn_down, tensor.name);
            if (ftype == F::MOSTLY_Q2_K) new_type = E::Q3_K;
            else if (ftype == F::MOSTLY_Q2_K_S) {
                if (i_layer < n_layer / 8) new_type = E::Q4_K;
            } else if (ftype == F::MOSTLY_Q3_K_M) {
                new_type = i_layer < n_layer / 16                       ? E::Q5_K
                           : !falcon || use_more_bits(i_layer, n_layer) ? E::Q4_K
                                                                        : E::Q3_K;
            } else if (ftype == F::MOSTLY_Q3_K_L) {
                new_type = falcon ? E::Q4_K : E::Q5_K;
            } else if (ftype == F::MOSTLY_Q4_K_M) {
                if (falcon) {
                    new_type = i_layer < n_layer / 16 ? E::Q6_K : use_more_bits(i_layer, n_layer) ? E::Q5_K : E::Q4_K;
                } else if (use_more_bits(i_layer, n_layer)) {
                    new_type = E::Q6_K;
                }
            } else if (i_layer < n_layer / 8 && (ftype == F::MOSTLY_IQ4_NL || ftype == F::MOSTLY_IQ4_XS) &&
                       !options.has_imatrix) {
                new_type = E::Q5_K;
            } else if (ftype == F::MOSTLY_Q5_K_M && use_more_bits(i_layer, n_layer)) {
                new_type = E::Q6_K;
            } else if (ftype == F::MOSTLY_Q4_K_S && !falcon && i_layer < n_layer / 8) {
                new_type = E::Q5_K;
            } else if ((ftype == F::MOSTLY_Q4_0 || ftype == F::MOSTLY_Q5_0) && options.has_imatrix &&
                       i_layer < n_layer / 8) {
                // Guards the first ffn_down layers, which go wild even with an imatrix.
                new_type = ftype == F::MOSTLY_Q4_0 ? E::Q4_1 : E::Q5_1;
            }
            ++i_ffn_down;
            return new_type;
        }
        if (cat == Category::AttnOutput) {
            if (!falcon) {
                if (facts.n_expert == 8) {
                    if (ftype == F::MOSTLY_Q2_K || ftype == F::MOSTLY_Q3_K_S || ftype == F::MOSTLY_Q3_K_M ||
                        ftype == F::MOSTLY_IQ4_NL || ftype == F::MOSTLY_Q4_K_S || ftype == F::MOSTLY_Q4_K_M ||
                        ftype == F::MOSTLY_IQ4_XS)
                        new_type = E::Q5_K;
                } else {
                    if (ftype == F::MOSTLY_Q2_K) new_type = E::Q3_K;
                    else if (ftype == F::MOSTLY_Q3_K_M) new_type = E::Q4_K;
                    else if (ftype == F::MOSTLY_Q3_K_L) new_type = E::Q5_K;
                }
            } else if (ftype == F::MOSTLY_Q3_K_L) {
                new_type = E::Q4_K;
            }
            return new_type;
        }
        if (cat == Category::AttnQkv) {
            if (ftype == F::MOSTLY_Q3_K_M || ftype == F::MOSTLY_Q3_K_L) new_type = E::Q4_K;
            else if (ftype == F::MOSTLY_Q4_K_M) new_type = E::Q5_K;
            else if (ftype == F::MOSTLY_Q5_K_M) new_type = E::Q6_K;
            return new_type;
        }
        // ffn_gate / ffn_up only change for the IQ3 recipes; the counters still advance.
        if (cat == Category::FfnGate) {
            (void)layer_info(i_ffn_gate, tensor.name);
            ++i_ffn_gate;
        } else if (cat == Category::FfnUp) {
            (void)layer_info(i_ffn_up, tensor.name);
            ++i_ffn_up;
        }
        return new_type;
    }
};

// A type whose block does not divide the row falls back to one that does
// (llama.cpp's tensor_type_fallback), finally to F16.
E fallback_type(const gguf::TensorInfo& tensor, E target, std::string& note) {
    const uint64_t ncols = tensor.ne[0];
    if (ncols % block_size(target) == 0) return target;
    E alt;
    switch (target) {
        case E::IQ4_XS: alt = E::IQ4_NL; break;
        case E::Q2_K:
        case E::Q3_K: alt = E::Q4_0; break;
        case E::Q4_K: alt = E::Q5_0; break;
        case E::Q5_K: alt = E::Q5_1; break;
        case E::Q6_K: alt = E::Q8_0; break;
        default:
            throw Error("quantize: tensor '" + tensor.name + "' has rows of " + std::to_string(ncols) +
                        " values, not a multiple of the " + std::to_string(block_size(target)) + "-value blocks of " +
                        std::string(element_type_name(target)) + ", and that type has no fallback");
    }
    if (ncols % block_size(alt) != 0) alt = E::F16;
    note = "rows of " + std::to_string(ncols) + " values are not a multiple of " + std::to_string(block_size(target)) +
           " (needed by " + std::string(element_type_name(target)) + "): falling back to " +
           std::string(element_type_name(alt));
    return alt;
}

int layer_of(const std::string& name) {
    int layer = -1;
    std::sscanf(name.c_str(), "blk.%d.", &layer);
    return layer;
}

}  // namespace

bool tensor_allows_quantization(const gguf::TensorInfo& tensor, bool quantize_output_tensor) {
    if (n_dims(tensor) < 2) return false;
    const std::string_view name = tensor.name;
    bool quantize = name.size() >= 6 && name.substr(name.size() - 6) == "weight";
    quantize &= !contains(name, "_norm.weight");
    quantize &= quantize_output_tensor || name != "output.weight";
    // Expert routers, tiny projections and position tables stay exact.
    static constexpr std::string_view kNever[] = {
        "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
        "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
        "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
        "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
        "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
        "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
        "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
        ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"};
    for (std::string_view part : kNever) quantize &= !contains(name, part);
    quantize &= name != "position_embd.weight" && name != "token_types.weight";
    return quantize;
}

std::vector<size_t> llama_tensor_order(const std::vector<gguf::TensorInfo>& tensors) {
    std::vector<size_t> order(tensors.size());
    std::vector<int> layer(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        order[i] = i;
        layer[i] = layer_of(tensors[i].name);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (layer[a] != layer[b]) return layer[a] < layer[b];
        return tensors[a].name < tensors[b].name;
    });
    return order;
}

std::vector<TensorPlan> plan_tensor_types(const std::vector<gguf::TensorInfo>& tensors, const ModelFacts& facts,
                                          const MixOptions& options) {
    const FileTypeInfo* ftype = file_type_info(options.file_type);
    if (!ftype) throw Error("quantize: unsupported file type " + std::to_string(static_cast<uint32_t>(options.file_type)));
    const E default_type = ftype->default_type;

    std::vector<std::pair<std::regex, E>> overrides;
    for (const TypeOverride& o : options.overrides) {
        try {
            overrides.emplace_back(std::regex(o.pattern), o.type);
        } catch (const std::regex_error& e) {
            throw Error("quantize: --tensor-type pattern '" + o.pattern + "' is not a valid regex: " + e.what());
        }
    }

    MixState state{facts, options};
    state.is_70b = facts.arch == "llama" && facts.n_layer == 80 && facts.n_head != facts.n_head_kv;
    state.n_ffn = static_cast<int>(facts.n_layer);
    for (const gguf::TensorInfo& t : tensors) {
        const Category c = category_of(t.name);
        if (is_attn_v_like(c)) ++state.n_attention_wv;
        if (c == Category::Output) state.tied_embeddings = false;
    }

    std::vector<TensorPlan> plans(tensors.size());
    for (size_t index : llama_tensor_order(tensors)) {
        const gguf::TensorInfo& t = tensors[index];
        TensorPlan& plan = plans[index];
        plan.quantizable = tensor_allows_quantization(t, options.quantize_output_tensor);
        plan.type = t.type;
        if (!plan.quantizable) continue;
        const Category cat = category_of(t.name);
        if (options.token_embedding_type && cat == Category::TokenEmbd) {
            plan.type = *options.token_embedding_type;
            continue;
        }
        if (options.output_tensor_type && cat == Category::Output) {
            plan.type = *options.output_tensor_type;
            continue;
        }
        E type = default_type;
        if (is_quantized(default_type)) {
            bool manual = false;
            for (const auto& [pattern, override_type] : overrides) {
                if (std::regex_search(t.name, pattern)) {
                    type = override_type;
                    manual = true;
                    break;
                }
            }
            if (!manual && !options.pure) type = state.mix_type(type, t, cat);
            type = fallback_type(t, type, plan.note);
        }
        plan.type = type;
    }
    return plans;
}

}  // namespace cria::quantizer
