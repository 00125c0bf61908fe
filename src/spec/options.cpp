// The table of speculative-decoding flags (see options.h).

#include "cria/spec/options.h"

#include <cerrno>
#include <cstdlib>

#include "cria/core/error.h"
#include "cria/runtime/options.h"

namespace cria::spec {

namespace {

int parse_int(const std::string& text, const std::string& flag, int lo, int hi) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
        throw Error(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                    text + "'");
    return static_cast<int>(v);
}

float parse_prob(const std::string& text, const std::string& flag) {
    char* end = nullptr;
    const float v = std::strtof(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= 0.0f && v <= 1.0f))
        throw Error(flag + ": expected a probability in [0, 1], got '" + text + "'");
    return v;
}

bool parse_bool(const std::string& text, const std::string& flag) {
    if (text == "1" || text == "on" || text == "true") return true;
    if (text == "0" || text == "off" || text == "false") return false;
    throw Error(flag + ": expected on or off, got '" + text + "'");
}

void add_ngram(std::vector<Option>& out, const std::string& kind, NgramParams SpecParams::*member) {
    const std::string base = "--spec-ngram-" + kind;
    out.push_back({base + "-size-n", "ngram-" + kind + ": key length n (default 12)",
                   [member, base](SpecParams& p, const std::string& v) {
                       (p.*member).size_n = parse_int(v, base + "-size-n", 1, 1024);
                   }});
    out.push_back({base + "-size-m", "ngram-" + kind + ": draft length m (default 48)",
                   [member, base](SpecParams& p, const std::string& v) {
                       (p.*member).size_m = parse_int(v, base + "-size-m", 1, 1024);
                   }});
    out.push_back({base + "-min-hits", "ngram-" + kind + ": occurrences before a key drafts (default 1)",
                   [member, base](SpecParams& p, const std::string& v) {
                       (p.*member).min_hits = parse_int(v, base + "-min-hits", 1, 16380);
                   }});
}

std::vector<Option> make_options() {
    std::vector<Option> o;
    o.push_back({"--spec-type", "speculative types, comma-separated: none, draft, ngram-simple, ngram-map-k, "
                                "ngram-map-k4v, ngram-mod, ngram-cache, draft-eagle3, draft-dflash, draft-dspark, draft-mtp",
                 [](SpecParams& p, const std::string& v) { p.types = parse_spec_types(v); }});
    o.push_back({"--spec-draft-model,--model-draft", "draft model GGUF (draft-simple, an eagle3 / dflash / dspark head, or an MTP GGUF); also -md FILE",
                 [](SpecParams& p, const std::string& v) { p.draft_model = v; }});
    o.push_back({"--spec-draft-n-max,--draft-max", "most tokens drafted per step (default 16)",
                 [](SpecParams& p, const std::string& v) {
                     p.n_max = p.draft.n_max = parse_int(v, "--spec-draft-n-max", 1, 255);
                 }});
    o.push_back({"--spec-draft-n-min,--draft-min", "fewest draft-model tokens worth verifying (default 0)",
                 [](SpecParams& p, const std::string& v) { p.draft.n_min = parse_int(v, "--spec-draft-n-min", 0, 255); }});
    o.push_back({"--spec-draft-p-min,--draft-p-min", "stop drafting below this draft probability (default 0.75)",
                 [](SpecParams& p, const std::string& v) { p.draft.p_min = parse_prob(v, "--spec-draft-p-min"); }});
    o.push_back({"--spec-draft-threads", "draft model threads (default: as the target)",
                 [](SpecParams& p, const std::string& v) { p.draft_threads = parse_int(v, "--spec-draft-threads", 1, 1024); }});
    o.push_back({"--spec-draft-ctx-size", "draft model context (default: as the target)",
                 [](SpecParams& p, const std::string& v) {
                     p.draft_n_ctx = static_cast<uint32_t>(parse_int(v, "--spec-draft-ctx-size", 0, 1 << 24));
                 }});
    o.push_back({"--spec-draft-cache-type-k,--cache-type-k-draft", "draft KV cache type of K (default f16)",
                 [](SpecParams& p, const std::string& v) { p.draft_type_k = runtime::parse_cache_type(v); }});
    o.push_back({"--spec-draft-cache-type-v,--cache-type-v-draft", "draft KV cache type of V (default f16)",
                 [](SpecParams& p, const std::string& v) { p.draft_type_v = runtime::parse_cache_type(v); }});
    add_ngram(o, "simple", &SpecParams::ngram_simple);
    add_ngram(o, "map-k", &SpecParams::ngram_map_k);
    add_ngram(o, "map-k4v", &SpecParams::ngram_map_k4v);
    o.push_back({"--spec-ngram-mod-n-match", "ngram-mod: n-gram length (default 24)",
                 [](SpecParams& p, const std::string& v) {
                     p.ngram_mod.n_match = parse_int(v, "--spec-ngram-mod-n-match", 1, 1024);
                 }});
    o.push_back({"--spec-ngram-mod-n-min", "ngram-mod: shortest draft (default 48)",
                 [](SpecParams& p, const std::string& v) { p.ngram_mod.n_min = parse_int(v, "--spec-ngram-mod-n-min", 0, 1024); }});
    o.push_back({"--spec-ngram-mod-n-max", "ngram-mod: longest draft (default 64)",
                 [](SpecParams& p, const std::string& v) { p.ngram_mod.n_max = parse_int(v, "--spec-ngram-mod-n-max", 1, 1024); }});
    o.push_back({"--spec-ngram-cache-static,--lookup-cache-static", "ngram-cache: static statistics file (read)",
                 [](SpecParams& p, const std::string& v) { p.ngram_cache.static_path = v; }});
    o.push_back({"--spec-ngram-cache-dynamic,--lookup-cache-dynamic",
                 "ngram-cache: dynamic statistics file (read, updated after each request)",
                 [](SpecParams& p, const std::string& v) { p.ngram_cache.dynamic_path = v; }});
    o.push_back({"--spec-adaptive", "adaptive drafting: on (default) or off",
                 [](SpecParams& p, const std::string& v) { p.adaptive = parse_bool(v, "--spec-adaptive"); }});
    return o;
}

}  // namespace

const std::vector<Option>& options() {
    static const std::vector<Option> table = make_options();
    return table;
}

void apply_option(SpecParams& params, const std::string& flag, const std::string& value) {
    if (flag == "-md") {
        params.draft_model = value;
        return;
    }
    for (const auto& o : options()) {
        size_t start = 0;
        while (start <= o.flags.size()) {
            const size_t comma = std::min(o.flags.find(',', start), o.flags.size());
            if (o.flags.compare(start, comma - start, flag) == 0 && comma - start == flag.size()) {
                o.apply(params, value);
                return;
            }
            start = comma + 1;
        }
    }
    throw Error("unknown speculative option " + flag);
}

}  // namespace cria::spec
