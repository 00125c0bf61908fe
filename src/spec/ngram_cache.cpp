// ngram-cache: lookup decoding from n-gram statistics (see ngram_cache.h).

#include "cria/spec/ngram_cache.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "cria/core/error.h"
#include "cria/spec/text_positions.h"

namespace cria::spec {

namespace {

// Below these sample sizes or agreement percentages (per n-gram length 1..4)
// a table does not draft: lax for the context table, strict for the dynamic one.
constexpr int kMinSamplesLax[kNgramCacheMax] = {2, 2, 1, 1};
constexpr int kMinPercentLax[kNgramCacheMax] = {66, 50, 50, 50};
constexpr int kMinSamplesStrict[kNgramCacheMax] = {4, 3, 2, 2};
constexpr int kMinPercentStrict[kNgramCacheMax] = {75, 66, 66, 66};
constexpr TokenId kNone = -1;

NgramKey key_of(const TokenId* tokens, int n) {
    NgramKey k;
    for (int i = 0; i < n; ++i) k.tokens[static_cast<size_t>(i)] = tokens[i];
    return k;
}

// From the static table alone.
TokenId draft_static(const NgramTable& table, const NgramKey& key) {
    const auto it = table.find(key);
    if (it == table.end()) return kNone;
    int64_t best = 0, sum = 0;
    TokenId token = kNone;
    for (const auto& [t, c] : it->second) {
        if (c > best || (c == best && t < token)) best = c, token = t;
        sum += c;
    }
    if (sum < kMinSamplesLax[kNgramCacheStatic - 1]) return kNone;
    if (100 * best < kMinPercentLax[kNgramCacheStatic - 1] * sum) return kNone;
    return token;
}

// From a primary table (context or dynamic), longest n-gram first, each
// candidate weighted by its static count (x100) where the static table knows it.
TokenId draft_primary(const NgramTable& table, const std::vector<NgramKey>& keys, const NgramCounts& statics,
                      const int* min_samples, const int* min_percent) {
    for (int i = static_cast<int>(keys.size()) - 1; i >= 0; --i) {
        const auto it = table.find(keys[static_cast<size_t>(i)]);
        if (it == table.end()) continue;
        int64_t best_primary = 0, best_static = 0, sum = 0;
        TokenId token = kNone;
        for (const auto& [t, c] : it->second) {
            const auto s = statics.find(t);
            const int64_t weight = s == statics.end() ? 1 : 100 * static_cast<int64_t>(s->second);
            const int64_t score = c * weight, best = best_primary * best_static;
            if (score > best || (score == best && t < token)) token = t, best_primary = c, best_static = weight;
            sum += c;
        }
        if (sum < min_samples[i]) continue;
        if (100 * best_primary < min_percent[i] * sum) continue;
        return token;
    }
    return kNone;
}

}  // namespace

size_t NgramKeyHash::operator()(const NgramKey& k) const {
    uint64_t h = 0;
    for (TokenId t : k.tokens) h = (h ^ static_cast<uint32_t>(t)) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h ^ (h >> 29));
}

void ngram_table_update(NgramTable& table, int n_min, int n_max, const std::vector<TokenId>& tokens, size_t n_new) {
    const auto size = static_cast<int64_t>(tokens.size());
    for (int n = n_min; n <= n_max; ++n) {
        for (int64_t i = std::max<int64_t>(size - static_cast<int64_t>(n_new), n); i < size; ++i)
            // n-grams with an image position in them are not counted (none spans an image).
            if (all_text(tokens.data() + i - n, static_cast<size_t>(n) + 1))
                ++table[key_of(tokens.data() + i - n, n)][tokens[static_cast<size_t>(i)]];
    }
}

NgramTable ngram_table_load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("ngram-cache: cannot open " + path);
    NgramTable table;
    auto read32 = [&](int32_t& v) { return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof v)); };
    for (;;) {
        NgramKey key;
        int32_t first = 0;
        if (!read32(first)) break;  // clean end of file
        key.tokens[0] = first;
        for (int i = 1; i < kNgramCacheMax; ++i)
            if (!read32(key.tokens[static_cast<size_t>(i)])) throw Error("ngram-cache: " + path + " is truncated");
        int32_t n = 0;
        if (!read32(n)) throw Error("ngram-cache: " + path + " is truncated");
        if (n <= 0) throw Error("ngram-cache: " + path + " has an n-gram with " + std::to_string(n) + " entries");
        auto& counts = table[key];
        for (int32_t i = 0; i < n; ++i) {
            int32_t token = 0, count = 0;
            if (!read32(token) || !read32(count)) throw Error("ngram-cache: " + path + " is truncated");
            if (count <= 0 || token < 0) throw Error("ngram-cache: " + path + " has an invalid entry");
            counts[token] += count;
        }
    }
    return table;
}

void ngram_table_save(const NgramTable& table, const std::string& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("ngram-cache: cannot write " + path);
    auto write32 = [&](int32_t v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); };
    for (const auto& [key, counts] : table) {
        if (counts.empty()) continue;
        for (TokenId t : key.tokens) write32(t);
        write32(static_cast<int32_t>(counts.size()));
        for (const auto& [t, c] : counts) {
            write32(t);
            write32(c);
        }
    }
    if (!out) throw Error("ngram-cache: writing " + path + " failed");
}

void ngram_table_merge(NgramTable& into, const NgramTable& add) {
    for (const auto& [key, counts] : add) {
        auto& target = into[key];
        for (const auto& [t, c] : counts) target[t] += c;
    }
}

NgramCacheDrafter::NgramCacheDrafter(const NgramCacheParams& params) : params_(params) {
    if (params.n_draft < 1) throw Error("ngram-cache: the draft length must be at least 1");
    if (!params.static_path.empty()) static_ = ngram_table_load(params.static_path);
    if (!params.dynamic_path.empty()) {
        // A dynamic file that does not exist yet is created by save_dynamic().
        if (std::ifstream(params.dynamic_path).good()) dynamic_ = ngram_table_load(params.dynamic_path);
    }
}

void NgramCacheDrafter::begin(const BeginInput& /*input*/) {
    context_.clear();
    counted_ = 0;
}

void NgramCacheDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const std::vector<TokenId>& history = input.history;
    const TokenId last = input.last;
    sequence_.assign(history.begin(), history.end());
    sequence_.push_back(last);
    if (counted_ < sequence_.size()) {
        ngram_table_update(context_, 1, kNgramCacheMax, sequence_, sequence_.size() - counted_);
        counted_ = sequence_.size();
    }
    const size_t base = sequence_.size();
    if (base < static_cast<size_t>(kNgramCacheStatic)) return;
    const int want = std::min(params_.n_draft, n_max);
    std::vector<NgramKey> keys;
    for (int i = 0; i < want; ++i) {
        // The drafted tokens extend the sequence for the next lookup.
        const size_t end = sequence_.size();
        const NgramKey static_key = key_of(sequence_.data() + end - kNgramCacheStatic, kNgramCacheStatic);
        const auto s = static_.find(static_key);
        static const NgramCounts kNoCounts;
        const NgramCounts& statics = s == static_.end() ? kNoCounts : s->second;
        keys.clear();
        for (int n = 1; n <= kNgramCacheMax && static_cast<size_t>(n) <= end; ++n)
            keys.push_back(key_of(sequence_.data() + end - static_cast<size_t>(n), n));
        TokenId token = draft_primary(context_, keys, statics, kMinSamplesLax, kMinPercentLax);
        if (token == kNone) token = draft_primary(dynamic_, keys, statics, kMinSamplesStrict, kMinPercentStrict);
        if (token == kNone) token = draft_static(static_, static_key);
        if (token == kNone) break;
        out.tokens.push_back(token);
        sequence_.push_back(token);
    }
}

void NgramCacheDrafter::save_dynamic() {
    if (params_.dynamic_path.empty()) return;
    ngram_table_merge(dynamic_, context_);
    ngram_table_save(dynamic_, params_.dynamic_path);
}

}  // namespace cria::spec
