// The drafter registry, the built-in drafters' registrations (in llama.cpp's
// order) and make_drafters. See registry.h for why they are in one file.

#include <algorithm>
#include <cstdio>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/spec/draft_model.h"
#include "cria/spec/dflash.h"
#include "cria/spec/eagle3.h"
#include "cria/spec/mtp.h"
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

// EAGLE-3 reads the target's features: a forward pass of one layer per token.
CRIA_REGISTER_DRAFTER(eagle3, SpecType::Eagle3, 90, [](const DrafterArgs& a) {
    if (a.params.draft_model.empty())
        throw Error("speculative type draft-eagle3 needs the EAGLE-3 head's GGUF (-md FILE)");
    if (!a.resources.eagle3_head) a.resources.eagle3_head = Eagle3Head::load(a.params.draft_model, a.target.model());
    const int threads = a.params.draft_threads > 0 ? a.params.draft_threads : a.target.n_threads();
    return std::make_unique<Eagle3Drafter>(a.resources.eagle3_head, a.params.draft,
                                           static_cast<int32_t>(a.target.n_ctx()), threads);
});

// MTP: the target's own NextN block (or a separate MTP GGUF), one pass per drafted token.
CRIA_REGISTER_DRAFTER(mtp, SpecType::Mtp, 78, [](const DrafterArgs& a) {
    const std::string path = a.params.draft_model.empty() ? a.target.model().file().path() : a.params.draft_model;
    if (!a.resources.mtp_head) a.resources.mtp_head = MtpHead::load(path, a.target.model());
    const int threads = a.params.draft_threads > 0 ? a.params.draft_threads : a.target.n_threads();
    return std::make_unique<MtpDrafter>(a.resources.mtp_head, a.params.draft, static_cast<int32_t>(a.target.n_ctx()),
                                        threads);
});

// DFlash: one forward pass of its block per draft.
CRIA_REGISTER_DRAFTER(dflash, SpecType::Dflash, 80, [](const DrafterArgs& a) {
    if (a.params.draft_model.empty())
        throw Error("speculative type draft-dflash needs the DFlash drafter's GGUF (-md FILE)");
    if (!a.resources.dflash_head) a.resources.dflash_head = DflashHead::load(a.params.draft_model, a.target.model());
    if (a.resources.dflash_head->dspark)
        throw Error(a.params.draft_model + ": this DFlash file has DSpark heads (markov_w1.weight): use draft-dspark");
    const int threads = a.params.draft_threads > 0 ? a.params.draft_threads : a.target.n_threads();
    return std::make_unique<DflashDrafter>(a.resources.dflash_head, a.params.draft,
                                           static_cast<int32_t>(a.target.n_ctx()), threads);
});

// DSpark: the DFlash block with its Markov and confidence heads.
CRIA_REGISTER_DRAFTER(dspark, SpecType::Dspark, 85, [](const DrafterArgs& a) {
    if (a.params.draft_model.empty())
        throw Error("speculative type draft-dspark needs the DSpark drafter's GGUF (-md FILE)");
    if (!a.resources.dflash_head) a.resources.dflash_head = DflashHead::load(a.params.draft_model, a.target.model());
    if (!a.resources.dflash_head->dspark)
        throw Error(a.params.draft_model + ": draft-dspark needs a dflash file with markov_w1.weight (this one has none)");
    const int threads = a.params.draft_threads > 0 ? a.params.draft_threads : a.target.n_threads();
    return std::make_unique<DflashDrafter>(a.resources.dflash_head, a.params.draft,
                                           static_cast<int32_t>(a.target.n_ctx()), threads);
});

std::vector<std::unique_ptr<Drafter>> make_drafters(const SpecParams& params, const runtime::Context& target,
                                                    const vocab::Vocab& target_vocab, DrafterResources* shared) {
    DrafterResources own;
    DrafterResources& resources = shared ? *shared : own;
    const auto listed = [&](SpecType t) {
        return std::find(params.types.begin(), params.types.end(), t) != params.types.end();
    };
    // The draft file (-md) asks for its drafter by itself, as in llama.cpp:
    // an eagle3 head for draft-eagle3 (detected from its architecture, which
    // llama.cpp leaves to --spec-type), any other model for draft-simple.
    bool eagle3_file = false, dflash_file = false, dspark_file = false, mtp_file = false;
    if (!params.draft_model.empty() && !listed(SpecType::Eagle3) && !listed(SpecType::Dflash) &&
        !listed(SpecType::Dspark) && !listed(SpecType::Mtp)) {
        eagle3_file = Eagle3Head::is_eagle3_file(params.draft_model);
        // llama.cpp: a dflash file is DSpark when it has markov_w1.weight.
        dspark_file = !eagle3_file && DflashHead::is_dspark_file(params.draft_model);
        dflash_file = !eagle3_file && !dspark_file && DflashHead::is_dflash_file(params.draft_model);
        // ... and a file with a NextN block is an MTP drafter.
        mtp_file = !eagle3_file && !dspark_file && !dflash_file && MtpHead::has_nextn(params.draft_model);
        if (eagle3_file || dflash_file || dspark_file || mtp_file)
            std::fprintf(stderr, "auto-detected speculative type '%s' from the draft model metadata\n",
                         eagle3_file  ? "draft-eagle3"
                         : dspark_file ? "draft-dspark"
                         : dflash_file ? "draft-dflash"
                                       : "draft-mtp");
    }
    const bool draft_file_is_head = eagle3_file || dflash_file || dspark_file || mtp_file ||
                                    listed(SpecType::Eagle3) || listed(SpecType::Dflash) ||
                                    listed(SpecType::Dspark) || listed(SpecType::Mtp);
    const auto wants = [&](SpecType t) {
        if (t == SpecType::Draft && !params.draft_model.empty() && !draft_file_is_head) return true;
        if (t == SpecType::Eagle3 && eagle3_file) return true;
        if (t == SpecType::Dflash && dflash_file) return true;
        if (t == SpecType::Dspark && dspark_file) return true;
        if (t == SpecType::Mtp && mtp_file) return true;
        return listed(t);
    };
    std::vector<std::unique_ptr<Drafter>> out;
    const DrafterArgs args{params, target, target_vocab, resources};
    for (const DrafterSpec& spec : drafter_registry())
        if (wants(spec.type)) out.push_back(spec.make(args));
    return out;
}

}  // namespace cria::spec
