#pragma once
// The grammar constraint as a sampler of the chain (llama.cpp's
// llama_sampler_init_grammar and llama_sampler_init_grammar_lazy_patterns),
// and the one place that turns user options (--grammar, --grammar-file,
// --json-schema) into such a sampler.
//
// apply() sets the logit of every token the grammar forbids to -infinity
// (the candidates stay in the list, as in llama.cpp); accept() advances the
// grammar with the chosen token and throws cria::Error when the grammar does
// not allow it; reset() goes back to the start (a lazy grammar waits for its
// trigger again); clone() copies the current state. Install it with
// Chain::set_grammar(), which checks the sampled token first and constrains
// the whole row only when that token is rejected.
//
// Feed it generated tokens only: prompt tokens are not part of the
// constrained output (llama.cpp accepts them with accept_grammar = false).

#include <memory>
#include <string>
#include <vector>

#include "cria/grammar/sampler.h"
#include "cria/sampling/sampler.h"

namespace cria::vocab {
class Vocab;
}

namespace cria::sampling {

class GrammarConstraint final : public Sampler {
public:
    // The vocabulary index and the parsed grammar are shared (clones and
    // several sequences reuse them); the automaton and its caches are not.
    GrammarConstraint(std::shared_ptr<const grammar::VocabIndex> index, std::shared_ptr<const grammar::Grammar> grammar,
                      grammar::SamplerOptions options = {});

    std::string_view name() const override { return "grammar"; }
    void apply(Candidates& candidates) override;
    void accept(TokenId token) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override;

    // False while a lazy grammar waits for its trigger.
    bool active() const { return sampler_->active(); }
    // The output so far is a complete string of the grammar (true while a lazy
    // grammar is inactive: nothing is constrained yet).
    bool can_end() const { return sampler_->can_end(); }

private:
    std::shared_ptr<const grammar::VocabIndex> index_;
    std::shared_ptr<const grammar::Grammar> grammar_;
    grammar::SamplerOptions options_;
    std::unique_ptr<grammar::GrammarSampler> sampler_;
    // The tokens accepted since the last reset: clone() replays them on a
    // fresh automaton (its caches are per sampler and not copyable).
    std::vector<TokenId> accepted_;
    std::vector<grammar::Candidate> scratch_;
};

// Where the grammar comes from: at most one of the three sources (the
// command line's --grammar, --grammar-file, --json-schema / -j, and
// llama.cpp's --json-schema-file). All empty: no grammar.
struct GrammarOptions {
    std::string grammar;           // GBNF text
    std::string grammar_file;      // path of a GBNF file
    std::string json_schema;       // JSON Schema text, converted to GBNF
    std::string json_schema_file;  // path of a JSON Schema file
    std::string root_rule = "root";

    // Lazy grammar: unconstrained until one of the triggers appears in the
    // output, then constrained from the trigger on (the trigger text is fed
    // to the grammar). Word and token triggers as llama.cpp's
    // COMMON_GRAMMAR_TRIGGER_TYPE_WORD / _TOKEN; `patterns` are searched in
    // the output, `full_patterns` must match all of it (llama.cpp's
    // _PATTERN / _PATTERN_FULL); with a capture group the grammar starts at
    // group 1.
    bool lazy = false;
    grammar::LazyTriggers triggers;

    bool empty() const { return grammar.empty() && grammar_file.empty() && json_schema.empty() && json_schema_file.empty(); }
};

// The GBNF text the options name: the text itself, the file's contents, or
// the converted schema; "" when the options name no grammar. Throws
// cria::Error (naming the flag or file) when more than one source is given,
// a file cannot be read or is empty, or the schema is not valid JSON or uses
// an unsupported keyword.
std::string grammar_source(const GrammarOptions& options);

// A grammar sampler for the options, or nullptr when they name no grammar.
// Throws cria::Error for everything grammar_source() rejects, GBNF syntax
// errors (line and column, prefixed with where the text came from), a lazy
// grammar without triggers, a trigger token outside the vocabulary and a bad
// trigger pattern. The overload with an index lets callers share one
// VocabIndex (building it walks the whole vocabulary).
std::unique_ptr<GrammarConstraint> make_grammar_sampler(const vocab::Vocab& vocab, const GrammarOptions& options);
std::unique_ptr<GrammarConstraint> make_grammar_sampler(std::shared_ptr<const grammar::VocabIndex> index,
                                                        const GrammarOptions& options);

}  // namespace cria::sampling
