// The registered architectures. Each lives in its own file of this folder;
// adding one is its file, one line here and its tests. (An explicit list
// rather than self-registering objects: the model is a static library, and
// the linker drops object files nothing refers to.)

#include <array>

#include "model/arch.h"

namespace cria::model {
namespace archs {
extern const ArchDefinition kLlama, kQwen2, kQwen3, kGemma2, kGemma3, kPhi3, kSmollm3, kSeedOss, kMistral3, kGranite,
    kExaone4, kQwen2Moe, kQwen3Moe, kOlmoe, kMinimaxM2, kErnie45Moe;
extern const ArchDefinition kMamba, kMamba2, kJamba, kGraniteHybrid, kQwen35, kQwen35Moe, kQwen3Next;
}

namespace {
constexpr std::array<const ArchDefinition*, 23> kArchitectures{
    &archs::kLlama,    &archs::kQwen2,   &archs::kQwen3,    &archs::kGemma2,     &archs::kGemma3,     &archs::kPhi3,
    &archs::kSmollm3,  &archs::kSeedOss, &archs::kMistral3, &archs::kGranite,    &archs::kExaone4,    &archs::kQwen2Moe,
    &archs::kQwen3Moe, &archs::kOlmoe,   &archs::kMinimaxM2, &archs::kErnie45Moe,
    &archs::kMamba,    &archs::kMamba2,  &archs::kJamba,    &archs::kGraniteHybrid,
    &archs::kQwen35,   &archs::kQwen35Moe, &archs::kQwen3Next,
};
}  // namespace

const ArchDefinition* find_architecture(std::string_view name) {
    for (const ArchDefinition* a : kArchitectures)
        if (a->name == name) return a;
    return nullptr;
}

std::vector<std::string_view> architecture_names() {
    std::vector<std::string_view> names;
    for (const ArchDefinition* a : kArchitectures) names.push_back(a->name);
    return names;
}

}  // namespace cria::model
