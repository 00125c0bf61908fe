#pragma once
// ngram-cache: lookup decoding from n-gram statistics (llama.cpp's
// common/ngram-cache, the `lookup` example).
//
// Three tables map n-grams (1 to 4 tokens) to counts of the token that
// followed: the context table (built from this request's tokens), an
// optional dynamic table (carried across requests, in a file) and an optional
// static table (from a large corpus, in a file; 2-grams, used to validate
// and as a last resort). Drafting extends the draft one token at a time with
// the most frequent continuation, the longest n-gram first, as long as enough
// samples agree strongly enough (llama.cpp's thresholds). Files use
// llama.cpp's layout: per n-gram, 4 int32 tokens (-1 = unused), an int32
// count of entries, then (int32 token, int32 count) pairs.

#include <array>
#include <string>
#include <unordered_map>

#include "cria/spec/drafter.h"

namespace cria::spec {

inline constexpr int kNgramCacheMax = 4;     // longest n-gram
inline constexpr int kNgramCacheStatic = 2;  // n-gram length of the static table

struct NgramKey {
    std::array<TokenId, kNgramCacheMax> tokens{-1, -1, -1, -1};
    bool operator==(const NgramKey&) const = default;
};
struct NgramKeyHash {
    size_t operator()(const NgramKey& k) const;
};
using NgramCounts = std::unordered_map<TokenId, int32_t>;
using NgramTable = std::unordered_map<NgramKey, NgramCounts, NgramKeyHash>;

// Counts, for n = n_min..n_max, the n-grams of `tokens` that end in its last `n_new` tokens.
void ngram_table_update(NgramTable& table, int n_min, int n_max, const std::vector<TokenId>& tokens, size_t n_new);
// Reads / writes a table file. Throws cria::Error for an unreadable or malformed file.
NgramTable ngram_table_load(const std::string& path);
void ngram_table_save(const NgramTable& table, const std::string& path);
void ngram_table_merge(NgramTable& into, const NgramTable& add);

struct NgramCacheParams {
    int n_draft = 8;                // llama.cpp's fixed draft length for this drafter
    std::string static_path;        // --spec-ngram-cache-static / --lookup-cache-static
    std::string dynamic_path;       // --spec-ngram-cache-dynamic / --lookup-cache-dynamic
};

class NgramCacheDrafter final : public Drafter {
public:
    explicit NgramCacheDrafter(const NgramCacheParams& params);
    std::string_view name() const override { return "ngram_cache"; }
    void begin(const BeginInput& input) override;
    void draft(const DraftInput& input, int n_max, Draft& out) override;
    int n_max() const override { return params_.n_draft; }
    // Merges this request's statistics into the dynamic table and writes it
    // to dynamic_path (nothing when no path was given).
    void save_dynamic();
    void end() override { save_dynamic(); }

    const NgramTable& context_table() const { return context_; }

private:
    NgramCacheParams params_;
    NgramTable context_, dynamic_, static_;
    size_t counted_ = 0;  // tokens of the sequence already in context_
    std::vector<TokenId> sequence_;
};

}  // namespace cria::spec
