// Parsing of --spec-type values.

#include "cria/spec/params.h"

#include <algorithm>

#include "cria/core/error.h"

namespace cria::spec {

namespace {
struct Named {
    std::string_view name;
    SpecType type;
};
constexpr Named kNames[] = {
    {"none", SpecType::None},           {"draft", SpecType::Draft},
    {"draft-simple", SpecType::Draft},  {"ngram-simple", SpecType::NgramSimple},
    {"ngram-map-k", SpecType::NgramMapK}, {"ngram-map-k4v", SpecType::NgramMapK4v},
    {"ngram-mod", SpecType::NgramMod},  {"ngram-cache", SpecType::NgramCache},
    {"draft-eagle3", SpecType::Eagle3}, {"draft-dflash", SpecType::Dflash},
    {"draft-dspark", SpecType::Dspark}, {"draft-mtp", SpecType::Mtp},
};
}  // namespace

bool SpecParams::enabled() const { return !types.empty() || !draft_model.empty(); }

SpecType parse_spec_type(std::string_view name) {
    std::string spelled(name);
    std::replace(spelled.begin(), spelled.end(), '_', '-');
    for (const auto& n : kNames)
        if (n.name == spelled) return n.type;
    throw Error("unknown speculative type '" + std::string(name) +
                "' (none, draft, ngram-simple, ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache, draft-eagle3, draft-dflash, draft-dspark, draft-mtp)");
}

std::vector<SpecType> parse_spec_types(std::string_view list) {
    std::vector<SpecType> types;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const SpecType t = parse_spec_type(list.substr(start, comma - start));
        if (t != SpecType::None && std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
        start = comma + 1;
    }
    return types;
}

std::string drafter_type_name(std::string_view drafter_name) {
    std::string spelled(drafter_name);
    std::replace(spelled.begin(), spelled.end(), '_', '-');
    for (const std::string& name : {spelled, "draft-" + spelled})
        for (const auto& n : kNames)
            if (n.name == name && n.type != SpecType::None) return std::string(spec_type_name(n.type));
    return spelled;
}

std::string_view spec_type_name(SpecType type) {
    for (const auto& n : kNames)
        if (n.type == type) return n.name;
    return "unknown";
}

}  // namespace cria::spec
