// The table of sampling flags (see options.h). Defaults are SamplingParams'
// (llama.cpp's common_params_sampling); the help texts show them.

#include "cria/sampling/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "cria/core/error.h"

namespace cria::sampling {

namespace {

// The whole text must be the number (std::stof would take "1.5x").
float parse_float(const std::string& flag, const std::string& text) {
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    const float v = std::strtof(begin, &end);
    if (text.empty() || end != begin + text.size() || errno == ERANGE || std::isnan(v))
        throw Error(flag + ": '" + text + "' is not a number");
    return v;
}

float parse_finite(const std::string& flag, const std::string& text) {
    const float v = parse_float(flag, text);
    if (!std::isfinite(v)) throw Error(flag + ": '" + text + "' must be finite");
    return v;
}

int32_t parse_int(const std::string& flag, const std::string& text) {
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(begin, &end, 10);
    if (text.empty() || end != begin + text.size() || errno == ERANGE || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max())
        throw Error(flag + ": '" + text + "' is not an integer");
    return static_cast<int32_t>(v);
}

// penalty_last_n and dry_penalty_last_n: -1 means the context size, less is an error (as llama.cpp).
int32_t parse_last_n(const std::string& flag, const std::string& text) {
    const int32_t v = parse_int(flag, text);
    if (v < -1) throw Error(flag + " must be -1 (context size), 0 (off) or a count, got " + text);
    return v;
}

std::string fmt(float v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

std::vector<Option> make_options() {
    const SamplingParams d;
    using S = SamplingFlagState;
    using V = const std::string&;
    std::vector<Option> o;
    auto add = [&](std::string flags, std::string help, std::function<void(S&, V)> apply) {
        o.push_back({std::move(flags), std::move(help), true, std::move(apply)});
    };
    add("--seed", "Sampling seed (default: random); also -s N",
        [](S& s, V v) {
            // llama.cpp reads it as uint32; -1 (LLAMA_DEFAULT_SEED) means random.
            char* end = nullptr;
            errno = 0;
            const long long seed = std::strtoll(v.c_str(), &end, 10);
            if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || seed < -1 || seed > 0xFFFFFFFFLL)
                throw Error("--seed: '" + v + "' is not -1 (random) or 0..4294967295");
            s.params.seed = seed == -1 ? kRandomSeed : static_cast<uint32_t>(seed);
        });
    add("--temp", "Temperature (default: " + fmt(d.temp) + "; <= 0: greedy)",
        [](S& s, V v) { s.params.temp = parse_finite("--temp", v); });
    add("--top-k", "Top-k sampling (default: " + std::to_string(d.top_k) + ", 0 = disabled)",
        [](S& s, V v) { s.params.top_k = parse_int("--top-k", v); });
    add("--top-p", "Top-p sampling (default: " + fmt(d.top_p) + ", 1.0 = disabled)",
        [](S& s, V v) { s.params.top_p = parse_finite("--top-p", v); });
    add("--min-p", "Min-p sampling (default: " + fmt(d.min_p) + ", 0.0 = disabled)",
        [](S& s, V v) { s.params.min_p = parse_finite("--min-p", v); });
    add("--top-n-sigma", "Top-n-sigma sampling (default: " + fmt(d.top_n_sigma) + ", -1.0 = disabled)",
        [](S& s, V v) { s.params.top_n_sigma = parse_finite("--top-n-sigma", v); });
    add("--xtc-probability", "XTC probability (default: " + fmt(d.xtc_probability) + ", 0.0 = disabled)",
        [](S& s, V v) { s.params.xtc_probability = parse_finite("--xtc-probability", v); });
    add("--xtc-threshold", "XTC threshold (default: " + fmt(d.xtc_threshold) + ", 1.0 = disabled)",
        [](S& s, V v) { s.params.xtc_threshold = parse_finite("--xtc-threshold", v); });
    add("--typical", "Locally typical sampling, parameter p (default: " + fmt(d.typ_p) + ", 1.0 = disabled)",
        [](S& s, V v) { s.params.typ_p = parse_finite("--typical", v); });
    add("--repeat-last-n", "Last N tokens to consider for penalizing repetition (default: " +
                               std::to_string(d.penalty_last_n) + ", 0 = disabled, -1 = ctx_size)",
        [](S& s, V v) { s.params.penalty_last_n = parse_last_n("--repeat-last-n", v); });
    add("--repeat-penalty", "Penalize repeated sequences of tokens (default: " + fmt(d.penalty_repeat) +
                                ", 1.0 = disabled)",
        [](S& s, V v) { s.params.penalty_repeat = parse_finite("--repeat-penalty", v); });
    add("--presence-penalty", "Repeat alpha presence penalty (default: " + fmt(d.penalty_present) +
                                  ", 0.0 = disabled)",
        [](S& s, V v) { s.params.penalty_present = parse_finite("--presence-penalty", v); });
    add("--frequency-penalty", "Repeat alpha frequency penalty (default: " + fmt(d.penalty_freq) +
                                   ", 0.0 = disabled)",
        [](S& s, V v) { s.params.penalty_freq = parse_finite("--frequency-penalty", v); });
    add("--dry-multiplier", "DRY sampling multiplier (default: " + fmt(d.dry_multiplier) + ", 0.0 = disabled)",
        [](S& s, V v) { s.params.dry_multiplier = parse_finite("--dry-multiplier", v); });
    add("--dry-base", "DRY sampling base value (default: " + fmt(d.dry_base) + "; must be >= 1.0)",
        [](S& s, V v) {
            // llama.cpp keeps the default for a base below 1; a flag that does nothing is refused here.
            const float base = parse_finite("--dry-base", v);
            if (base < 1.0f) throw Error("--dry-base must be >= 1.0, got " + v);
            s.params.dry_base = base;
        });
    add("--dry-allowed-length", "Allowed length for DRY sampling (default: " + std::to_string(d.dry_allowed_length) + ")",
        [](S& s, V v) { s.params.dry_allowed_length = parse_int("--dry-allowed-length", v); });
    add("--dry-penalty-last-n", "DRY penalty for the last n tokens (default: " + std::to_string(d.dry_penalty_last_n) +
                                    ", 0 = disable, -1 = context size)",
        [](S& s, V v) { s.params.dry_penalty_last_n = parse_last_n("--dry-penalty-last-n", v); });
    add("--dry-sequence-breaker",
        "Add a sequence breaker for DRY sampling, clearing the defaults (\\n : \" *) at the first use; "
        "'none': no breakers; repeatable",
        [](S& s, V v) {
            if (!s.dry_breakers_replaced) {
                s.params.dry_sequence_breakers.clear();
                s.dry_breakers_replaced = true;
            }
            if (v == "none") s.params.dry_sequence_breakers.clear();
            else s.params.dry_sequence_breakers.push_back(v);
        });
    add("--dynatemp-range", "Dynamic temperature range (default: " + fmt(d.dynatemp_range) + ", 0.0 = disabled)",
        [](S& s, V v) { s.params.dynatemp_range = parse_finite("--dynatemp-range", v); });
    add("--dynatemp-exp", "Dynamic temperature exponent (default: " + fmt(d.dynatemp_exponent) + ")",
        [](S& s, V v) { s.params.dynatemp_exponent = parse_finite("--dynatemp-exp", v); });
    add("--mirostat", "Mirostat sampling (default: 0, 0 = disabled, 1 = Mirostat, 2 = Mirostat 2.0); "
                      "top-k, top-p and the other samplers are then not used",
        [](S& s, V v) {
            const int32_t m = parse_int("--mirostat", v);
            if (m < 0 || m > 2) throw Error("--mirostat must be 0, 1 or 2, got " + v);
            s.params.mirostat = m;
        });
    add("--mirostat-lr", "Mirostat learning rate, parameter eta (default: " + fmt(d.mirostat_eta) + ")",
        [](S& s, V v) { s.params.mirostat_eta = parse_finite("--mirostat-lr", v); });
    add("--mirostat-ent", "Mirostat target entropy, parameter tau (default: " + fmt(d.mirostat_tau) + ")",
        [](S& s, V v) { s.params.mirostat_tau = parse_finite("--mirostat-ent", v); });
    add("-l,--logit-bias", "Modify the likelihood of a token: TOKEN_ID(+/-)BIAS, e.g. 15043+1 or 15043-inf; repeatable",
        [](S& s, V v) { s.params.logit_bias.push_back(parse_logit_bias(v)); });
    add("--samplers", "Samplers in order, separated by ';' (default: " + samplers_to_names(d.samplers) + ")",
        [](S& s, V v) { s.params.samplers = samplers_from_names(v, true); });
    add("--sampling-seq,--sampler-seq", "Samplers in order, one letter each (default: " + samplers_to_chars(d.samplers) + ")",
        [](S& s, V v) { s.params.samplers = samplers_from_chars(v); });
    o.push_back({"--ignore-eos",
                 "Ignore end of stream tokens and continue generating (a -inf logit bias on every end-of-generation token)",
                 false, [](S& s, V) { s.params.ignore_eos = true; }});
    return o;
}

// "-l,--logit-bias" -> {"-l", "--logit-bias"}
std::vector<std::string> names_of(const std::string& flags) {
    std::vector<std::string> names;
    size_t start = 0;
    while (start <= flags.size()) {
        size_t end = flags.find(',', start);
        if (end == std::string::npos) end = flags.size();
        names.push_back(flags.substr(start, end - start));
        start = end + 1;
    }
    return names;
}

}  // namespace

const std::vector<Option>& options() {
    static const std::vector<Option> table = make_options();
    return table;
}

void apply_option(SamplingFlagState& state, const std::string& flag, const std::string& value) {
    const std::string name = flag == "-s" ? "--seed" : flag;
    for (const auto& o : options()) {
        for (const auto& n : names_of(o.flags)) {
            if (n == name) {
                o.apply(state, value);
                return;
            }
        }
    }
    throw Error("unknown sampling flag '" + flag + "'");
}

LogitBias parse_logit_bias(const std::string& text) {
    // llama.cpp: "ss >> key >> sign", then the rest is std::stof'd and negated for '-'.
    size_t i = 0;
    while (i < text.size() && (text[i] >= '0' && text[i] <= '9')) ++i;
    if (i == 0 || i > 9 || i >= text.size() || (text[i] != '+' && text[i] != '-'))
        throw Error("--logit-bias: '" + text + "' is not TOKEN_ID(+/-)BIAS (e.g. 15043+1, 15043-inf)");
    const int32_t token = parse_int("--logit-bias", text.substr(0, i));
    const std::string rest = text.substr(i + 1);
    if (rest.empty() || rest[0] == '+' || rest[0] == '-' || rest[0] == ' ')
        throw Error("--logit-bias: '" + text + "' is not TOKEN_ID(+/-)BIAS (e.g. 15043+1, 15043-inf)");
    const float magnitude = parse_float("--logit-bias", rest);
    return {token, text[i] == '-' ? -magnitude : magnitude};
}

}  // namespace cria::sampling
