#pragma once
// The pipeline's flags, common to every subcommand (docs/DISTRIBUTED.md):
//   --layer-split 10,14   layers per MPI rank, in rank order (default: by weight bytes)
//   --mpi-timeout S       the longest wait for a message between ranks (default 300 s)
// They are taken out of the command line before CLI11 parses the subcommand.

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cria/core/error.h"

namespace cria::tools {

struct PipelineFlags {
    bool given = false;
    std::string layer_split;
    double timeout_s = 300;
};

// Removes the flags (as "--flag value" or "--flag=value") from args.
inline PipelineFlags take_pipeline_flags(std::vector<char*>& args) {
    PipelineFlags flags;
    std::vector<char*> kept;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        std::string value;
        std::string name;
        for (const char* f : {"--layer-split", "--mpi-timeout"}) {
            const std::string_view flag = f;
            if (a == flag) {
                if (i + 1 >= args.size()) throw Error(std::string(flag) + " needs a value");
                name = flag;
                value = args[++i];
            } else if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=') {
                name = flag;
                value = std::string(a.substr(flag.size() + 1));
            }
        }
        if (name.empty()) {
            kept.push_back(args[i]);
            continue;
        }
        flags.given = true;
        if (name == "--layer-split") {
            flags.layer_split = value;
        } else {
            char* end = nullptr;
            flags.timeout_s = std::strtod(value.c_str(), &end);
            if (end == value.c_str() || *end != '\0' || !(flags.timeout_s > 0))
                throw Error("--mpi-timeout: expected a positive number of seconds, got '" + value + "'");
        }
    }
    kept.push_back(nullptr);  // argv[argc] stays null
    args = std::move(kept);
    args.pop_back();
    args.reserve(args.size() + 1);
    return flags;
}

}  // namespace cria::tools
