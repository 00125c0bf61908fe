#pragma once
// Grammar-constrained sampling: removes every token that cannot continue a
// string of the grammar, and advances the grammar with the chosen token.
//
// Token texts are those llama.cpp's grammar sees (token_to_piece with
// special tokens rendered). A token may span several grammar elements and
// end inside a UTF-8 character; end-of-generation tokens are allowed only
// where the grammar can end. A lazy sampler does nothing until a trigger
// (word, token or regex) appears in the output, then constrains from the
// trigger on, feeding the trigger text itself to the grammar.

#include <cstdint>
#include <memory>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cria/grammar/automaton.h"
#include "cria/vocab/vocab.h"

namespace cria::grammar {

// Everything about a vocabulary that the sampler needs, computed once and
// shared by all samplers over it: token texts and a byte trie over them,
// so tokens sharing a prefix are checked once.
class VocabIndex {
public:
    static std::shared_ptr<const VocabIndex> build(const vocab::Vocab& vocab);

    size_t size() const { return pieces_.size(); }
    const std::string& piece(vocab::TokenId id) const { return pieces_[static_cast<size_t>(id)]; }
    bool is_eog(vocab::TokenId id) const { return eog_[static_cast<size_t>(id)]; }
    // Exact token text -> id (first one), or kNoToken.
    vocab::TokenId find(std::string_view text) const;

    // Sets bit `id` of `mask` for every non-EOG token whose text the grammar
    // accepts from `state`. Walks the trie, pruning dead prefixes.
    void allowed_by_text(Automaton& automaton, StateId state, std::vector<uint64_t>& mask) const;

private:
    std::vector<std::string> pieces_;
    std::vector<bool> eog_;
    std::vector<vocab::TokenId> by_text_;  // ids sorted by text
    // Trie in compressed rows: node n's edges are edges_[nodes_[n].edges ..
    // nodes_[n + 1].edges), the tokens whose text ends at node n are
    // ends_[nodes_[n].ends .. nodes_[n + 1].ends). Children of a node are
    // numbered consecutively (breadth-first), so the walk is mostly sequential.
    struct Node {
        uint32_t edges;
        uint32_t ends;
    };
    struct Edge {
        uint32_t node;
        uint8_t byte;
    };
    std::vector<Node> nodes_;
    std::vector<Edge> edges_;
    std::vector<vocab::TokenId> ends_;
};

struct Candidate {
    vocab::TokenId id;
    float logit;
};

struct LazyTriggers {
    std::vector<std::string> words;         // literal text anywhere in the output
    std::vector<vocab::TokenId> tokens;     // a token id
    std::vector<std::string> patterns;      // ECMAScript regex searched in the output; the grammar
                                            // starts at capture group 1 if it matched, else at the match
    std::vector<std::string> full_patterns; // regex that must match the whole output so far (same start rule)
    bool empty() const { return words.empty() && tokens.empty() && patterns.empty() && full_patterns.empty(); }
};

struct SamplerOptions {
    std::string root_rule = "root";
    bool lazy = false;          // wait for a trigger (triggers must not be empty)
    LazyTriggers triggers;
    size_t mask_cache_entries = 256;  // allowed-token masks remembered per grammar state (0: none)
    size_t max_cached_states = 1 << 16;  // automaton states kept before the cache is cleared
};

class GrammarSampler {
public:
    // Parses `gbnf` (with <token> references resolved in this vocabulary).
    GrammarSampler(const vocab::Vocab& vocab, std::string_view gbnf, SamplerOptions options = {});
    GrammarSampler(std::shared_ptr<const VocabIndex> index, std::shared_ptr<const Grammar> grammar, SamplerOptions options = {});

    // Sets the logit of every token the grammar forbids to -infinity.
    void apply(std::span<Candidate> candidates);
    // Same over a full logits row (index = token id).
    void apply(std::span<float> logits);
    // Whether `token` may come next (what apply() keeps).
    bool allows(vocab::TokenId token);

    // Advances with the chosen token. Throws cria::Error when the grammar
    // does not allow it (or when a lazy trigger's text does not parse).
    void accept(vocab::TokenId token);

    bool active() const { return active_; }   // false while a lazy grammar waits for its trigger
    bool can_end() const;                      // the grammar could stop here
    void reset();

    const Automaton& automaton() const { return *automaton_; }

private:
    void init();
    const std::vector<uint64_t>& mask();
    void feed_text(std::string_view text);
    void check_triggers();
    void maybe_trim_cache();

    std::shared_ptr<const VocabIndex> index_;
    std::shared_ptr<const Grammar> grammar_;
    std::unique_ptr<Automaton> automaton_;
    SamplerOptions options_;
    StateId state_ = kDeadState;
    bool active_ = true;
    std::string trigger_buffer_;
    std::vector<std::regex> patterns_, full_patterns_;
    std::vector<uint64_t> scratch_mask_;
    struct CachedMask {
        std::vector<uint64_t> bits;
        uint64_t last_use = 0;
    };
    std::unordered_map<StateId, CachedMask> masks_;
    uint64_t mask_generation_ = 0;
    uint64_t clock_ = 0;
};

}  // namespace cria::grammar
