#include "cria/runtime/options.h"

#include <algorithm>
#include <cctype>

#include "cria/core/error.h"

namespace cria::runtime {

ElementType parse_cache_type(const std::string& name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto t = element_type_from_name(lower);
    if (!t || (*t != ElementType::F32 && *t != ElementType::F16 && *t != ElementType::BF16 && *t != ElementType::Q8_0 &&
               *t != ElementType::Q4_0))
        throw Error("unsupported KV cache type '" + name + "' (f32, f16, bf16, q8_0, q4_0)");
    return *t;
}

gguf::LoadMode parse_load_mode_or_throw(const std::string& name) {
    const auto mode = gguf::parse_load_mode(name);
    if (!mode) throw Error("unknown load mode '" + name + "' (auto, none, mmap, mlock, mmap+mlock, dio)");
    return *mode;
}

}  // namespace cria::runtime

namespace cria::runtime {

void take_dash_options(const std::vector<std::string>& args,
                       const std::vector<std::pair<std::string, std::string*>>& known) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string name = args[i], value;
        bool has_value = false;
        if (const auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_value = true;
        }
        const auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == name; });
        if (it == known.end()) throw Error("unknown argument '" + args[i] + "'");
        if (!has_value) {
            if (i + 1 >= args.size()) throw Error("option " + name + " needs a value");
            value = args[++i];
        }
        *it->second = value;
    }
}

}  // namespace cria::runtime

namespace cria::runtime {

uint32_t parse_count(const std::string& text, const std::string& what) {
    uint64_t v = 0;
    if (text.empty() || text.size() > 10) throw Error(what + ": '" + text + "' is not a count");
    for (char c : text) {
        if (c < '0' || c > '9') throw Error(what + ": '" + text + "' is not a count");
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (v > 0xFFFFFFFFu) throw Error(what + ": '" + text + "' is too large");
    return static_cast<uint32_t>(v);
}

}  // namespace cria::runtime
