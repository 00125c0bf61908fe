#pragma once
// The drafter registry: every drafter registers a factory under its
// --spec-type, like the subcommands (tools/command.h), and make_drafters
// (speculative.h) builds the ones a SpecParams asks for, in registry order
// (llama.cpp's: the draftless n-gram drafters first, the draft model last).
//
//   CRIA_REGISTER_DRAFTER(ngram_simple, SpecType::NgramSimple, 10,
//                         [](const DrafterArgs& a) { return std::make_unique<NgramSimpleDrafter>(a.params.ngram_simple); });
//
// The built-in drafters register in src/spec/drafters.cpp, next to
// make_drafters: cria_spec is a static library, and the linker keeps a
// registration only if something else in its object file is used. A
// drafter outside the library (in an executable) can register anywhere.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cria/spec/drafter.h"
#include "cria/spec/params.h"

namespace cria::model {
class Model;
}
namespace cria::runtime {
class Context;
}
namespace cria::vocab {
class Vocab;
}

namespace cria::spec {

class NgramModPool;
class Eagle3Head;
class DflashHead;
class MtpHead;

// What drafters may share (the server's slots share one of each); null:
// the factory creates its own.
struct DrafterResources {
    std::shared_ptr<NgramModPool> mod_pool;           // ngram-mod's pool (null: 4M entries, 16 MiB)
    std::shared_ptr<const model::Model> draft_model;  // loaded and checked already (null: load -md)
    uint32_t draft_n_ctx = 0;                         // the draft context (0: the target context's size)
    std::shared_ptr<const Eagle3Head> eagle3_head;    // loaded and checked already (null: load -md)
    std::shared_ptr<const DflashHead> dflash_head;    // loaded and checked already (null: load -md)
    std::shared_ptr<const MtpHead> mtp_head;          // loaded and checked already (null: load -md or the target)
};

// What a factory gets.
struct DrafterArgs {
    const SpecParams& params;
    const runtime::Context& target;
    const vocab::Vocab& target_vocab;
    DrafterResources& resources;  // a factory may fill in what it created, for the next slot to share
};

using DrafterFactory = std::function<std::unique_ptr<Drafter>(const DrafterArgs&)>;

struct DrafterSpec {
    SpecType type;         // the --spec-type that asks for it
    int order;             // make_drafters builds in increasing order
    DrafterFactory make;   // throws cria::Error when it cannot be built
};

// Registered drafters, sorted by order.
const std::vector<DrafterSpec>& drafter_registry();

struct DrafterRegistrar {
    explicit DrafterRegistrar(DrafterSpec spec);
};

}  // namespace cria::spec

#define CRIA_REGISTER_DRAFTER(ident, ...) \
    static const ::cria::spec::DrafterRegistrar cria_drafter_registrar_##ident{::cria::spec::DrafterSpec{__VA_ARGS__}}
