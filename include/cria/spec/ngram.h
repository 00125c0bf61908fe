#pragma once
// The n-gram drafters: they need no model, only the token history.
//
//   ngram-simple   the last n tokens are looked up in the history (latest
//                  earlier occurrence first); the m tokens that followed are the draft.
//   ngram-map-k    the same lookup; keys remember how many tokens of their
//                  last draft were accepted and draft no more than that next time.
//   ngram-map-k4v  up to four different m-grams are counted after each key;
//                  one is drafted only when it has been seen min_hits times and
//                  at least three times as often as all others together.
//   ngram-mod      a fixed-size hashed pool (n-gram hash -> next token) that
//                  several requests (server slots) can share; drafts token by
//                  token while the pool knows a continuation.
// Behaviour as llama.cpp's common/ngram-map.cpp and ngram-mod.cpp.

#include <cstdint>
#include <memory>
#include <vector>

#include "cria/spec/drafter.h"

namespace cria::spec {

struct NgramParams {
    int size_n = 12;    // key length (--spec-ngram-*-size-n)
    int size_m = 48;    // draft length (--spec-ngram-*-size-m)
    int min_hits = 1;   // --spec-ngram-*-min-hits (k4v)
};

class NgramSimpleDrafter final : public Drafter {
public:
    explicit NgramSimpleDrafter(const NgramParams& params);
    std::string_view name() const override { return "ngram_simple"; }
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    int n_max() const override { return params_.size_m; }

private:
    NgramParams params_;
};

class NgramMapDrafter final : public Drafter {
public:
    // key_only: ngram-map-k; otherwise ngram-map-k4v.
    NgramMapDrafter(const NgramParams& params, bool key_only);
    std::string_view name() const override { return key_only_ ? "ngram_map_k" : "ngram_map_k4v"; }
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    void accept(int n_accepted) override;
    int n_max() const override { return params_.size_m; }

private:
    static constexpr int kValues = 4;
    struct Value {
        size_t start = 0;     // where the m-gram starts in the history (0: empty slot)
        uint32_t count = 0;   // how often it followed the key
        int n_accepted = 0;   // tokens accepted the last time it was drafted
    };
    struct Key {
        size_t start = 0;      // an occurrence of the key in the history
        size_t stats_upto = 0; // history scanned for values up to here
        uint32_t hits = 0;
        Value values[kValues];
    };
    NgramParams params_;
    bool key_only_;
    std::vector<Key> keys_;
    bool last_created_ = false;
    size_t last_key_ = 0;
    int last_value_ = 0;
};

// The hashed pool of ngram-mod: entries[hash(n tokens) % size] = the token that followed.
class NgramModPool {
public:
    static constexpr TokenId kEmpty = -1;
    NgramModPool(int n, size_t size);
    int n() const { return n_; }
    size_t size() const { return entries_.size(); }
    size_t used() const { return used_; }
    void add(const TokenId* tokens);  // tokens[0..n) -> tokens[n]
    TokenId get(const TokenId* tokens) const;
    void reset();

private:
    size_t index(const TokenId* tokens) const;
    int n_;
    size_t used_ = 0;
    std::vector<TokenId> entries_;
};

struct NgramModParams {
    int n_match = 24;  // --spec-ngram-mod-n-match
    int n_min = 48;    // --spec-ngram-mod-n-min
    int n_max = 64;    // --spec-ngram-mod-n-max
};

class NgramModDrafter final : public Drafter {
public:
    // `pool` may be shared by several drafters (one per server slot); its n must be n_match.
    NgramModDrafter(const NgramModParams& params, std::shared_ptr<NgramModPool> pool);
    std::string_view name() const override { return "ngram_mod"; }
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    void accept(int n_accepted) override;
    int n_max() const override { return params_.n_max; }
    int n_min() const override { return params_.n_min; }

private:
    NgramModParams params_;
    std::shared_ptr<NgramModPool> pool_;
    size_t added_upto_ = 0;   // history positions already added to the pool
    size_t n_draft_last_ = 0;
    int n_low_ = 0;           // consecutive drafts with less than half accepted
    std::vector<TokenId> scratch_;
};

}  // namespace cria::spec
