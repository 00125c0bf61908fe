// The drafter registry, the built-in drafters' registrations (in llama.cpp's
// order) and make_drafters. See registry.h for why they are in one file.

#include <algorithm>

#include "cria/core/error.h"
#include "cria/spec/draft_model.h"
#include "cria/spec/registry.h"
#include "cria/spec/speculative.h"

namespace cria::spec {

namespace {

std::vector<DrafterSpec>& registry() {
    static std::vector<DrafterSpec> specs;
    return specs;
}

}  // namespace

const std::vector<DrafterSpec>& drafter_registry() { return registry(); }

DrafterRegistrar::DrafterRegistrar(DrafterSpec spec) {
    auto& specs = registry();
    const auto at = std::upper_bound(specs.begin(), specs.end(), spec.order,
                                     [](int order, const DrafterSpec& s) { return order < s.order; });
    specs.insert(at, std::move(spec));
}

// Draftless drafters first: they cost almost nothing when they have no match.
CRIA_REGISTER_DRAFTER(ngram_simple, SpecType::NgramSimple, 10,
                      [](const DrafterArgs& a) { return std::make_unique<NgramSimpleDrafter>(a.params.ngram_simple); });
CRIA_REGISTER_DRAFTER(ngram_map_k, SpecType::NgramMapK, 20, [](const DrafterArgs& a) {
    return std::make_unique<NgramMapDrafter>(a.params.ngram_map_k, true);
});
CRIA_REGISTER_DRAFTER(ngram_map_k4v, SpecType::NgramMapK4v, 30, [](const DrafterArgs& a) {
    return std::make_unique<NgramMapDrafter>(a.params.ngram_map_k4v, false);
});
CRIA_REGISTER_DRAFTER(ngram_mod, SpecType::NgramMod, 40, [](const DrafterArgs& a) {
    if (!a.resources.mod_pool)
        a.resources.mod_pool = std::make_shared<NgramModPool>(a.params.ngram_mod.n_match, size_t{4} << 20);
    return std::make_unique<NgramModDrafter>(a.params.ngram_mod, a.resources.mod_pool);
});
CRIA_REGISTER_DRAFTER(ngram_cache, SpecType::NgramCache, 50,
                      [](const DrafterArgs& a) { return std::make_unique<NgramCacheDrafter>(a.params.ngram_cache); });
// The draft model last: it costs a forward pass per drafted token.
CRIA_REGISTER_DRAFTER(draft, SpecType::Draft, 100, [](const DrafterArgs& a) {
    if (!a.resources.draft_model) a.resources.draft_model = load_draft_model(a.params, a.target_vocab);
    return make_draft_model_drafter(a.params, a.target, a.target_vocab,
                                    a.resources.draft_n_ctx ? a.resources.draft_n_ctx : a.target.n_ctx(),
                                    a.resources.draft_model);
});

std::vector<std::unique_ptr<Drafter>> make_drafters(const SpecParams& params, const runtime::Context& target,
                                                    const vocab::Vocab& target_vocab, DrafterResources* shared) {
    DrafterResources own;
    DrafterResources& resources = shared ? *shared : own;
    const auto wants = [&](SpecType t) {
        // A draft model (-md) asks for the draft drafter by itself, as in llama.cpp.
        if (t == SpecType::Draft && !params.draft_model.empty()) return true;
        return std::find(params.types.begin(), params.types.end(), t) != params.types.end();
    };
    std::vector<std::unique_ptr<Drafter>> out;
    const DrafterArgs args{params, target, target_vocab, resources};
    for (const DrafterSpec& spec : drafter_registry())
        if (wants(spec.type)) out.push_back(spec.make(args));
    return out;
}

}  // namespace cria::spec
