#pragma once
// Speculative decoding settings, as llama.cpp's common_params_speculative and
// its flags (-md, --spec-type, --spec-draft-*, --spec-ngram-*), and the
// parsing of --spec-type lists.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/spec/draft_model.h"
#include "cria/spec/ngram.h"
#include "cria/spec/ngram_cache.h"
#include "cria/spec/step_clock.h"

namespace cria::spec {

enum class SpecType { None, Draft, NgramSimple, NgramMapK, NgramMapK4v, NgramMod, NgramCache, Eagle3, Dflash, Dspark, Mtp };

struct SpecParams {
    std::vector<SpecType> types;   // --spec-type a,b; Draft is implied by a draft model
    std::string draft_model;       // -md / --spec-draft-model
    DraftModelParams draft;        // --spec-draft-n-max / -n-min / -p-min
    int draft_threads = 0;         // --spec-draft-threads (<= 0: as the target)
    uint32_t draft_n_ctx = 0;      // 0: as the target
    ElementType draft_type_k = ElementType::F16;  // --spec-draft-cache-type-k
    ElementType draft_type_v = ElementType::F16;
    NgramParams ngram_simple;      // --spec-ngram-simple-size-n / -size-m / -min-hits
    NgramParams ngram_map_k;       // --spec-ngram-map-k-*
    NgramParams ngram_map_k4v;     // --spec-ngram-map-k4v-*
    NgramModParams ngram_mod;      // --spec-ngram-mod-n-match / -n-min / -n-max
    NgramCacheParams ngram_cache;  // --spec-ngram-cache-static / -dynamic
    int n_max = 16;                // the most tokens drafted per step, over all drafters
    bool adaptive = true;          // --spec-adaptive / --no-spec-adaptive (cria's own)
    // No seed here: drafting and verification are seeded from the request's
    // sampling seed (step.h), so --seed / "seed" decide the whole output.
    // What times drafts and target decodes for adaptive drafting and the
    // metrics (step_clock.h); empty: steady_clock. No flag: tests set it.
    StepClock clock;

    bool enabled() const;          // any drafter configured
};

// "none", "draft" (also "draft-simple"), "ngram-simple", "ngram-map-k",
// "ngram-map-k4v", "ngram-mod", "ngram-cache", "draft-eagle3", "draft-dflash", "draft-dspark", "draft-mtp" (underscores
// accepted too).
SpecType parse_spec_type(std::string_view name);
// A comma-separated list; "none" alone gives an empty list. Throws cria::Error.
std::vector<SpecType> parse_spec_types(std::string_view list);
std::string_view spec_type_name(SpecType type);  // the flag spelling
// The --spec-type spelling a drafter answers to, from its statistics name
// (Drafter::name(): "ngram_simple" is ngram-simple; "eagle3", "dflash",
// "dspark" and "mtp" are draft-*); a name that is no type (a drafter from
// outside the registry) is returned with dashes for underscores.
std::string drafter_type_name(std::string_view drafter_name);

}  // namespace cria::spec
