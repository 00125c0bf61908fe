// llama.cpp's default parameters and chain construction (common_sampler_init),
// and the --sampling-seq / --samplers spellings of the sampler order.

#include "cria/sampling/params.h"

#include <limits>
#include <string>

#include "cria/core/error.h"
#include "cria/sampling/samplers.h"
#include "cria/vocab/vocab.h"

namespace cria::sampling {

std::vector<SamplerType> SamplingParams::default_sampler_order() {
    return {SamplerType::Penalties, SamplerType::Dry,  SamplerType::TopNSigma, SamplerType::TopK,
            SamplerType::TypicalP,  SamplerType::TopP, SamplerType::MinP,      SamplerType::Xtc,
            SamplerType::Temperature};
}

namespace {

struct TypeInfo {
    SamplerType type;
    char letter;
    std::string_view name;
};

constexpr TypeInfo kTypes[] = {
    {SamplerType::Dry, 'd', "dry"},
    {SamplerType::TopK, 'k', "top_k"},
    {SamplerType::TypicalP, 'y', "typ_p"},
    {SamplerType::TopP, 'p', "top_p"},
    {SamplerType::TopNSigma, 's', "top_n_sigma"},
    {SamplerType::MinP, 'm', "min_p"},
    {SamplerType::Temperature, 't', "temperature"},
    {SamplerType::Xtc, 'x', "xtc"},
    {SamplerType::Penalties, 'e', "penalties"},
};

struct AltName {
    std::string_view name;
    SamplerType type;
};

constexpr AltName kAltNames[] = {
    {"top-k", SamplerType::TopK},         {"top-p", SamplerType::TopP},       {"top-n-sigma", SamplerType::TopNSigma},
    {"nucleus", SamplerType::TopP},       {"typical-p", SamplerType::TypicalP}, {"typical", SamplerType::TypicalP},
    {"typ-p", SamplerType::TypicalP},     {"typ", SamplerType::TypicalP},     {"min-p", SamplerType::MinP},
    {"temp", SamplerType::Temperature},
};

const TypeInfo& info(SamplerType type) {
    for (const TypeInfo& t : kTypes) {
        if (t.type == type) {
            return t;
        }
    }
    throw Error("sampling: unknown sampler type " + std::to_string(static_cast<int>(type)));
}

int32_t resolve_last_n(int32_t last_n, int32_t n_ctx, const char* what) {
    if (last_n < -1) {
        throw Error(std::string("sampling: ") + what + " must be >= -1, got " + std::to_string(last_n));
    }
    return last_n == -1 ? n_ctx : last_n;
}

}  // namespace

char sampler_char(SamplerType type) { return info(type).letter; }
std::string_view sampler_name(SamplerType type) { return info(type).name; }

std::vector<SamplerType> samplers_from_chars(std::string_view chars) {
    std::vector<SamplerType> result;
    for (char c : chars) {
        bool found = false;
        for (const TypeInfo& t : kTypes) {
            if (t.letter == c) {
                result.push_back(t.type);
                found = true;
                break;
            }
        }
        if (!found) {
            // llama.cpp warns and skips; a typo in a sampler order is better reported.
            throw Error(std::string("sampling: unknown sampler letter '") + c + "' (known: edskypmxt)");
        }
    }
    return result;
}

std::string samplers_to_chars(const std::vector<SamplerType>& samplers) {
    std::string text;
    for (SamplerType type : samplers) {
        text += sampler_char(type);
    }
    return text;
}

std::vector<SamplerType> samplers_from_names(std::string_view names, bool allow_alt_names) {
    std::vector<SamplerType> result;
    size_t start = 0;
    while (start <= names.size()) {
        size_t end = names.find(';', start);
        if (end == std::string_view::npos) {
            end = names.size();
        }
        const std::string_view name = names.substr(start, end - start);
        start = end + 1;
        if (name.empty()) {
            continue;
        }
        bool found = false;
        for (const TypeInfo& t : kTypes) {
            if (t.name == name) {
                result.push_back(t.type);
                found = true;
                break;
            }
        }
        if (!found && allow_alt_names) {
            for (const AltName& alt : kAltNames) {
                if (alt.name == name) {
                    result.push_back(alt.type);
                    found = true;
                    break;
                }
            }
        }
        if (!found) {
            throw Error("sampling: unknown sampler name '" + std::string(name) + "'");
        }
    }
    return result;
}

std::string samplers_to_names(const std::vector<SamplerType>& samplers) {
    std::string text;
    for (SamplerType type : samplers) {
        if (!text.empty()) {
            text += ';';
        }
        text += sampler_name(type);
    }
    return text;
}

Chain build_chain(const SamplingParams& params, const ChainContext& context) {
    const int32_t n_vocab =
        context.vocab != nullptr ? static_cast<int32_t>(context.vocab->size()) : context.n_vocab;
    const int32_t penalty_last_n = resolve_last_n(params.penalty_last_n, context.n_ctx, "penalty_last_n");
    const int32_t dry_last_n = resolve_last_n(params.dry_penalty_last_n, context.n_ctx, "dry_penalty_last_n");
    const size_t min_keep = static_cast<size_t>(std::max(params.min_keep, 0));

    Chain chain;

    std::vector<LogitBias> biases = params.logit_bias;
    if (params.ignore_eos) {
        if (context.vocab == nullptr) {
            throw Error("sampling: ignore_eos needs the vocabulary to find the end-of-generation tokens");
        }
        for (TokenId id = 0; id < n_vocab; ++id) {
            if (context.vocab->is_eog(id)) {
                biases.push_back({id, -std::numeric_limits<float>::infinity()});
            }
        }
    }
    if (!biases.empty()) {
        chain.add(make_logit_bias(std::move(biases)));
    }

    switch (params.mirostat) {
        case 0:
            for (SamplerType type : params.samplers) {
                switch (type) {
                    case SamplerType::Penalties:
                        chain.add(make_penalties(penalty_last_n, params.penalty_repeat, params.penalty_freq,
                                                 params.penalty_present));
                        break;
                    case SamplerType::Dry:
                        if (context.vocab != nullptr) {
                            chain.add(make_dry(*context.vocab, context.n_ctx_train, params.dry_multiplier,
                                               params.dry_base, params.dry_allowed_length, dry_last_n,
                                               params.dry_sequence_breakers));
                        } else {
                            const bool enabled = params.dry_multiplier != 0.0f && params.dry_base >= 1.0f &&
                                                 dry_last_n != 0;
                            if (enabled && !params.dry_sequence_breakers.empty()) {
                                throw Error("sampling: DRY sequence breakers need the vocabulary to be tokenized");
                            }
                            chain.add(make_dry_from_tokens(context.n_ctx_train, params.dry_multiplier,
                                                           params.dry_base, params.dry_allowed_length, dry_last_n,
                                                           {}));
                        }
                        break;
                    case SamplerType::TopNSigma: chain.add(make_top_n_sigma(params.top_n_sigma)); break;
                    case SamplerType::TopK: chain.add(make_top_k(params.top_k)); break;
                    case SamplerType::TypicalP: chain.add(make_typical(params.typ_p, min_keep)); break;
                    case SamplerType::TopP: chain.add(make_top_p(params.top_p, min_keep)); break;
                    case SamplerType::MinP: chain.add(make_min_p(params.min_p, min_keep)); break;
                    case SamplerType::Xtc:
                        chain.add(make_xtc(params.xtc_probability, params.xtc_threshold, min_keep, params.seed));
                        break;
                    case SamplerType::Temperature:
                        chain.add(make_temperature_ext(params.temp, params.dynatemp_range, params.dynatemp_exponent));
                        break;
                }
            }
            chain.add(make_dist(params.seed));
            break;
        case 1:
            chain.add(make_temperature(params.temp));
            chain.add(make_mirostat(n_vocab, params.seed, params.mirostat_tau, params.mirostat_eta, 100));
            break;
        case 2:
            chain.add(make_temperature(params.temp));
            chain.add(make_mirostat_v2(params.seed, params.mirostat_tau, params.mirostat_eta));
            break;
        default:
            throw Error("sampling: unknown mirostat version " + std::to_string(params.mirostat) + " (0, 1 or 2)");
    }
    return chain;
}

}  // namespace cria::sampling
