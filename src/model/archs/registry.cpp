// The registered architectures. Each lives in its own file of this folder;
// adding one is its file, one line here and its tests. (An explicit list
// rather than self-registering objects: the model is a static library, and
// the linker drops object files nothing refers to.)

#include "model/arch.h"

namespace cria::model {
namespace archs {
// One line per architecture (merges of new families touch only their own line).
extern const ArchDefinition kLlama;
extern const ArchDefinition kQwen2;
extern const ArchDefinition kQwen3;
extern const ArchDefinition kGemma2;
extern const ArchDefinition kGemma3;
extern const ArchDefinition kPhi3;
extern const ArchDefinition kSmollm3;
extern const ArchDefinition kSeedOss;
extern const ArchDefinition kMistral3;
extern const ArchDefinition kGranite;
extern const ArchDefinition kExaone4;
extern const ArchDefinition kQwen2Moe;
extern const ArchDefinition kQwen3Moe;
extern const ArchDefinition kOlmoe;
extern const ArchDefinition kMinimaxM2;
extern const ArchDefinition kErnie45Moe;
extern const ArchDefinition kGraniteMoe;
extern const ArchDefinition kMuseGlimmer;
extern const ArchDefinition kGraniteSwa;
extern const ArchDefinition kGptOss;
extern const ArchDefinition kMamba;
extern const ArchDefinition kMamba2;
extern const ArchDefinition kJamba;
extern const ArchDefinition kGraniteHybrid;
extern const ArchDefinition kLfm2;
extern const ArchDefinition kLfm2Moe;
extern const ArchDefinition kNemotronH;
extern const ArchDefinition kNemotronHMoe;
extern const ArchDefinition kDeepseek2;
extern const ArchDefinition kGlm4Moe;
extern const ArchDefinition kQwen35;
extern const ArchDefinition kQwen35Moe;
extern const ArchDefinition kQwen3Next;
extern const ArchDefinition kFalconH1;
extern const ArchDefinition kMinimax01;
extern const ArchDefinition kKimiLinear;
extern const ArchDefinition kBailingMoe3;
extern const ArchDefinition kKimiK3;
extern const ArchDefinition kMimo2;
extern const ArchDefinition kBert;
extern const ArchDefinition kNomicBert;
}  // namespace archs

namespace {
const ArchDefinition* const kArchitectures[] = {
    &archs::kLlama,
    &archs::kQwen2,
    &archs::kQwen3,
    &archs::kGemma2,
    &archs::kGemma3,
    &archs::kPhi3,
    &archs::kSmollm3,
    &archs::kSeedOss,
    &archs::kMistral3,
    &archs::kGranite,
    &archs::kExaone4,
    &archs::kQwen2Moe,
    &archs::kQwen3Moe,
    &archs::kOlmoe,
    &archs::kMinimaxM2,
    &archs::kErnie45Moe,
    &archs::kGraniteMoe,
    &archs::kMuseGlimmer,
    &archs::kGraniteSwa,
    &archs::kGptOss,
    &archs::kMamba,
    &archs::kMamba2,
    &archs::kJamba,
    &archs::kGraniteHybrid,
    &archs::kLfm2,
    &archs::kLfm2Moe,
    &archs::kNemotronH,
    &archs::kNemotronHMoe,
    &archs::kDeepseek2,
    &archs::kGlm4Moe,
    &archs::kQwen35,
    &archs::kQwen35Moe,
    &archs::kQwen3Next,
    &archs::kFalconH1,
    &archs::kMinimax01,
    &archs::kKimiLinear,
    &archs::kBailingMoe3,
    &archs::kKimiK3,
    &archs::kMimo2,
    &archs::kBert,
    &archs::kNomicBert,
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
