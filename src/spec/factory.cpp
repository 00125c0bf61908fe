// make_drafters: the drafters a SpecParams asks for, in llama.cpp's order.

#include <algorithm>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/spec/speculative.h"

namespace cria::spec {

std::vector<std::unique_ptr<Drafter>> make_drafters(const SpecParams& params, const runtime::Context& target,
                                                    const vocab::Vocab& target_vocab, float temperature,
                                                    std::shared_ptr<NgramModPool> mod_pool) {
    const auto wants = [&](SpecType t) { return std::find(params.types.begin(), params.types.end(), t) != params.types.end(); };
    std::vector<std::unique_ptr<Drafter>> out;
    // Draftless drafters first: they cost almost nothing when they have no match.
    if (wants(SpecType::NgramSimple)) out.push_back(std::make_unique<NgramSimpleDrafter>(params.ngram_simple));
    if (wants(SpecType::NgramMapK)) out.push_back(std::make_unique<NgramMapDrafter>(params.ngram_map_k, true));
    if (wants(SpecType::NgramMapK4v)) out.push_back(std::make_unique<NgramMapDrafter>(params.ngram_map_k4v, false));
    if (wants(SpecType::NgramMod)) {
        if (!mod_pool) mod_pool = std::make_shared<NgramModPool>(params.ngram_mod.n_match, size_t{4} << 20);
        out.push_back(std::make_unique<NgramModDrafter>(params.ngram_mod, mod_pool));
    }
    if (wants(SpecType::NgramCache)) out.push_back(std::make_unique<NgramCacheDrafter>(params.ngram_cache));
    if (wants(SpecType::Draft) && params.draft_model.empty())
        throw Error("speculative type draft needs a draft model (-md FILE)");
    if (!params.draft_model.empty()) {
        std::shared_ptr<const model::Model> model = model::Model::load(params.draft_model);
        const vocab::Vocab draft_vocab = vocab::Vocab::from_gguf(model->file());
        check_vocab_compatible(target_vocab, draft_vocab);
        runtime::ContextParams cp = target.params();
        cp.n_seq_max = 1;
        cp.embeddings = false;
        cp.pooling = runtime::Pooling::None;
        if (params.draft_n_ctx) cp.n_ctx = params.draft_n_ctx;
        cp.n_threads = params.draft_threads > 0 ? params.draft_threads : target.n_threads();
        cp.type_k = params.draft_type_k;
        cp.type_v = params.draft_type_v;
        DraftModelParams dp = params.draft;
        dp.sample = temperature > 0.0f;
        out.push_back(std::make_unique<DraftModelDrafter>(std::move(model), cp, dp,
                                                          static_cast<int32_t>(target_vocab.size())));
    }
    return out;
}

}  // namespace cria::spec
