// The grammar sampler of the chain, and grammar options -> sampler.

#include "cria/sampling/grammar.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "cria/grammar/json_schema.h"
#include "cria/vocab/vocab.h"

namespace cria::sampling {
namespace {

// Below this many candidates, asking the sampler token by token is cheaper
// than copying the list (the chain probes a single sampled token).
constexpr size_t kProbeLimit = 16;

std::string read_text_file(const std::string& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(std::string(what) + " '" + path + "' cannot be read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw Error(std::string(what) + " '" + path + "' cannot be read");
    std::string result = text.str();
    if (result.find_first_not_of(" \t\r\n") == std::string::npos) throw Error(std::string(what) + " '" + path + "' is empty");
    return result;
}

std::string schema_to_gbnf(const std::string& text, const std::string& origin) {
    nlohmann::json schema;
    try {
        schema = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(origin + " is not valid JSON: " + e.what());
    }
    try {
        return grammar::json_schema_to_gbnf(schema);
    } catch (const Error& e) {
        throw Error(origin + ": " + e.what());
    }
}

// Which flag (or file) the grammar text came from, for error messages.
std::string origin_of(const GrammarOptions& options) {
    if (!options.grammar.empty()) return "--grammar";
    if (!options.grammar_file.empty()) return "grammar file '" + options.grammar_file + "'";
    if (!options.json_schema.empty()) return "--json-schema";
    return "JSON schema file '" + options.json_schema_file + "'";
}

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const grammar::VocabIndex> index,
                                     std::shared_ptr<const grammar::Grammar> grammar, grammar::SamplerOptions options)
    : index_(std::move(index)), grammar_(std::move(grammar)), options_(std::move(options)) {
    sampler_ = std::make_unique<grammar::GrammarSampler>(index_, grammar_, options_);
}

void GrammarConstraint::apply(Candidates& candidates) {
    if (!sampler_->active()) return;
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    if (candidates.size() <= kProbeLimit) {
        for (Candidate& c : candidates) {
            if (!sampler_->allows(c.id)) c.logit = kNegInf;
        }
        return;
    }
    scratch_.resize(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) scratch_[i] = {candidates[i].id, candidates[i].logit};
    sampler_->apply(std::span<grammar::Candidate>(scratch_));
    for (size_t i = 0; i < candidates.size(); ++i) candidates[i].logit = scratch_[i].logit;
}

void GrammarConstraint::accept(TokenId token) {
    sampler_->accept(token);  // throws when the grammar forbids the token: then it is not recorded
    accepted_.push_back(token);
}

void GrammarConstraint::reset() {
    sampler_->reset();
    accepted_.clear();
}

std::unique_ptr<Sampler> GrammarConstraint::clone() const {
    auto copy = std::make_unique<GrammarConstraint>(index_, grammar_, options_);
    for (TokenId token : accepted_) copy->accept(token);
    return copy;
}

std::string grammar_source(const GrammarOptions& options) {
    const int sources = int(!options.grammar.empty()) + int(!options.grammar_file.empty()) +
                        int(!options.json_schema.empty()) + int(!options.json_schema_file.empty());
    if (sources > 1) {
        throw Error("grammar: give only one of --grammar, --grammar-file, --json-schema and --json-schema-file");
    }
    if (!options.grammar.empty()) return options.grammar;
    if (!options.grammar_file.empty()) return read_text_file(options.grammar_file, "grammar file");
    if (!options.json_schema.empty()) return schema_to_gbnf(options.json_schema, "--json-schema");
    if (!options.json_schema_file.empty()) {
        return schema_to_gbnf(read_text_file(options.json_schema_file, "JSON schema file"),
                              "JSON schema file '" + options.json_schema_file + "'");
    }
    return {};
}

namespace {

std::unique_ptr<GrammarConstraint> build_sampler(std::shared_ptr<const grammar::VocabIndex> index,
                                                 const GrammarOptions& options, const std::string& gbnf) {
    // A JSON schema's grammar always starts at "root".
    const bool from_schema = !options.json_schema.empty() || !options.json_schema_file.empty();
    const std::string root = from_schema ? "root" : options.root_rule;
    const grammar::VocabIndex* idx = index.get();
    std::shared_ptr<const grammar::Grammar> parsed;
    try {
        parsed = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(
            gbnf, root, [idx](std::string_view text) { return static_cast<int32_t>(idx->find(text)); }));
    } catch (const Error& e) {
        throw Error(origin_of(options) + ": " + e.what());
    }
    grammar::SamplerOptions sampler_options;
    sampler_options.root_rule = root;
    sampler_options.lazy = options.lazy;
    sampler_options.triggers = options.triggers;
    return std::make_unique<GrammarConstraint>(std::move(index), std::move(parsed), std::move(sampler_options));
}

}  // namespace

std::unique_ptr<GrammarConstraint> make_grammar_sampler(const vocab::Vocab& vocab, const GrammarOptions& options) {
    // Bad flags and files fail before the vocabulary is indexed.
    const std::string gbnf = grammar_source(options);
    if (gbnf.empty()) return nullptr;
    return build_sampler(grammar::VocabIndex::build(vocab), options, gbnf);
}

std::unique_ptr<GrammarConstraint> make_grammar_sampler(std::shared_ptr<const grammar::VocabIndex> index,
                                                        const GrammarOptions& options) {
    if (!index) throw Error("grammar: no vocabulary index");
    const std::string gbnf = grammar_source(options);
    if (gbnf.empty()) return nullptr;
    return build_sampler(std::move(index), options, gbnf);
}

}  // namespace cria::sampling
