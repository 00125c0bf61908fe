#pragma once
// Random-weight GGUF models with real architectures and shapes, for tests
// (small fixtures of every supported architecture) and benchmarks (the shapes
// of Llama-3.2-1B and Qwen3-0.6B in any weight type). Tensor names and
// metadata keys are llama.cpp's, so the files load there too.
//
// Weights are N(0, stddev) from a seeded generator: the same spec always
// gives the same file. Tensors are generated and quantized one at a time while
// the file is written, so even a 2 GB model never sits in memory whole.

#include <cstdint>
#include <optional>
#include <string>

#include "cria/core/element_type.h"

namespace cria::model {

struct SyntheticModelSpec {
    // llama, qwen2, qwen3, gemma2, gemma3, phi3, smollm3, seed_oss, mistral3, granite, exaone4,
    // qwen2moe, qwen3moe, olmoe, minimax-m2, ernie4_5-moe, granitemoe, muse-glimmer, granite_swa, gpt-oss,
    // deepseek2, glm4moe, qwen35, qwen35moe, qwen3next, bert, nomic-bert
    std::string arch = "llama";
    std::string name = "synthetic";
    uint32_t n_vocab = 512;
    uint32_t n_embd = 64;
    uint32_t n_layer = 2;
    uint32_t n_nextn = 0;  // exaone4: MTP layers after the n_layer trunk layers (nextn_predict_layers)
    uint32_t n_head = 4;
    uint32_t n_head_kv = 2;
    uint32_t head_dim = 16;
    uint32_t n_ff = 128;
    uint32_t n_ctx = 2048;
    bool tied_output = true;
    float rope_freq_base = 10000.0f;
    uint32_t sliding_window = 0;  // gemma2/gemma3/phi3/muse-glimmer/granite_swa/gpt-oss: 0 = no sliding window key
    // muse-glimmer, granite_swa: attention.sliding_window_pattern as a bool per layer
    // (-1: every other layer slides, layer 0 first), a scalar (> 0), or absent (0).
    int32_t swa_pattern = -1;
    // > 0: rope.scaling.type "yarn" with this factor and original context
    // (gpt-oss's files: 32 and 4096).
    float rope_yarn_factor = 0.0f;
    uint32_t rope_yarn_original_context = 4096;
    // Mixture of experts (llama, qwen3moe, granite, mistral3...): n_expert > 0 writes a router and
    // stacked experts of width n_ff_exp instead of the dense feed-forward.
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_exp = 0;
    uint32_t n_ff_shexp = 0;  // the shared expert's width (qwen2moe: with its gate; ernie4_5-moe)
    uint32_t n_layer_dense_lead = 0;  // ernie4_5-moe, deepseek2: leading layers with a dense feed-forward
    uint32_t n_expert_groups = 0;       // deepseek2: expert groups (expert_group_count) ...
    uint32_t n_expert_groups_used = 0;  // ... and how many each token keeps

    // deepseek2's multi-head latent attention, its widths derived from
    // head_dim (hd): latent 2 hd, roped part hd, unroped query/key part 2 hd,
    // value 2 hd, low-rank query 64 (0: attn_q). The k_b / v_b per head
    // (absorbed form), or with mla_plain the older attn_kv_b built from the
    // very same values, so both files compute the same function.
    uint32_t n_lora_q = 64;
    bool mla_plain = false;

    // qwen35 / qwen35moe / qwen3next: every full_attention_interval-th layer
    // is gated attention, the others gated delta nets of ssm_n_k_heads key
    // and ssm_n_v_heads value heads of ssm_head_dim (0: head_dim).
    uint32_t full_attention_interval = 2;
    uint32_t ssm_n_k_heads = 2;
    uint32_t ssm_n_v_heads = 4;
    uint32_t ssm_head_dim = 0;

    // bert / nomic-bert (encoders, WordPiece vocabulary): {arch}.pooling_type
    // (-1: no key, or mean on nomic-bert, which needs it), and bert's reranker head cls / cls.output (one label).
    int32_t pooling_type = -1;
    bool classifier_head = false;
    // With classifier_head: only cls.output, the single-layer head of
    // BertForSequenceClassification (cross-encoders), no cls / tanh.
    bool classifier_direct = false;
    ElementType weight_type = ElementType::F32;  // 2-D projection matrices
    // The stacked expert matrices (*_exps); unset: weight_type. (Real
    // gpt-oss files keep MXFP4 experts beside other types.)
    std::optional<ElementType> expert_type;
    ElementType embd_type = ElementType::F32;    // token embedding (and tied output)
    uint64_t seed = 1;
    float stddev = 0.02f;

    // A small model of `arch` for tests: a few layers, widths that exercise
    // grouped-query attention and non-power-of-two sizes where the type allows.
    static SyntheticModelSpec tiny(const std::string& arch);
    // Llama-3.2-1B shapes: 2048 wide, 16 layers, 32/8 heads of 64, ffn 8192, vocab 128256, tied.
    static SyntheticModelSpec llama_1b(ElementType type);
    // Qwen3-0.6B shapes: 1024 wide, 28 layers, 16/8 heads of 128, ffn 3072, vocab 151936, tied.
    static SyntheticModelSpec qwen3_0_6b(ElementType type);
    // Qwen3.5-style hybrid: 1024 wide, 24 layers (3 gated delta-net layers to
    // 1 gated attention layer), attention 8/2 heads of 256, delta nets of 16
    // key and 16 value heads of 128, ffn 3584, vocab 151936, tied.
    static SyntheticModelSpec qwen35_hybrid(ElementType type);
};

// Writes the model to `path`. Throws cria::Error for an unknown architecture,
// shapes a type cannot hold, or an I/O failure.
void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& path);

}  // namespace cria::model
