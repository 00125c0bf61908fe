#pragma once
// The sampling flags of `cria run` and `cria serve`, spelt, defaulted and
// read as llama.cpp's common/arg.cpp does (--temp, --top-k, --repeat-last-n,
// --dry-*, --xtc-*, --mirostat*, --dynatemp-*, --logit-bias, --samplers, ...),
// in one table so both commands accept exactly the same ones. CLI11 is a
// tools dependency, so the library only names and applies them:
//
//   for (const auto& o : sampling::options())
//       cmd.add_option_function<std::string>(o.flags, [st, &o](const std::string& v) { o.apply(*st, v); }, o.help);
//
// "-s N" (the seed) is a one-dash short flag that "-sys" would be read as
// by CLI11: read it with runtime::take_dash_options and apply it with
// apply_option(state, "-s", N).

#include <functional>
#include <string>
#include <vector>

#include "cria/sampling/params.h"

namespace cria::sampling {

// What the flags write to. The first --dry-sequence-breaker replaces the
// default breakers, later ones add to them (llama.cpp keeps that state in a
// static; here it is per command line).
struct SamplingFlagState {
    SamplingParams params;
    bool dry_breakers_replaced = false;
};

struct Option {
    std::string flags;       // CLI11 spelling, e.g. "-l,--logit-bias"
    std::string help;        // with llama.cpp's default
    bool takes_value = true; // false: a switch (--ignore-eos)
    std::function<void(SamplingFlagState&, const std::string&)> apply;  // throws cria::Error on a bad value
};

const std::vector<Option>& options();
// Applies one flag by any of its names ("--temp", "-s", "--seed", ...);
// switches take an empty value. Throws cria::Error for an unknown flag or a bad value.
void apply_option(SamplingFlagState& state, const std::string& flag, const std::string& value = {});

// "TOKEN_ID(+/-)BIAS" as llama.cpp's --logit-bias reads it: "15043+1",
// "15043-inf". Throws cria::Error naming the flag's expected form.
LogitBias parse_logit_bias(const std::string& text);

}  // namespace cria::sampling
