// Byte-level BPE ("gpt2" vocabs): pre-tokenize into words, then in each word
// repeatedly merge the adjacent pair with the lowest merge rank. Symbols are
// raw bytes (each stands for one GPT-2 byte character), so no text is built
// while merging. Repeated words are served from a per-call cache.

#include <queue>

#include "vocab/bpe_merges.h"
#include "vocab/byte_encoding.h"
#include "vocab/utf8.h"
#include "vocab/vocab_impl.h"

namespace cria::vocab {

namespace {

struct Symbol {
    int prev;
    int next;
    uint32_t start;
    uint32_t length;  // bytes; 0 once merged into its left neighbour
    int32_t piece;    // interned text, -1 when it takes part in no merge
};

struct Bigram {
    int left;
    int right;
    int32_t rank;
    uint32_t length;
    int32_t result;
};

// Lowest rank first; on ties the leftmost pair (llama.cpp's order).
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

class WordEncoder {
public:
    explicit WordEncoder(const Vocab::Impl& v) : v_(v), merges_(*v.merges) {}

    void encode(std::string_view word, std::vector<TokenId>& out) {
        if (v_.ignore_merges) {
            encoded_.clear();
            for (char c : word) encoded_ += byte_encoding::byte_to_text(static_cast<uint8_t>(c));
            const TokenId whole = v_.find(encoded_);
            if (whole != kNoToken) {
                out.push_back(whole);
                return;
            }
        }
        symbols_.clear();
        for (uint32_t i = 0; i < word.size(); ++i) {
            const int index = static_cast<int>(i);
            symbols_.push_back({index - 1, i + 1 == word.size() ? -1 : index + 1, i, 1,
                                merges_.byte_piece(static_cast<uint8_t>(word[i]))});
        }
        queue_ = {};
        for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_add(i - 1, i);

        while (!queue_.empty()) {
            const Bigram bigram = queue_.top();
            queue_.pop();
            Symbol& left = symbols_[bigram.left];
            Symbol& right = symbols_[bigram.right];
            if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) continue;
            left.length += right.length;
            left.piece = bigram.result;
            right.length = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[right.next].prev = bigram.left;
            try_add(left.prev, bigram.left);
            try_add(bigram.left, left.next);
        }

        for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
            const Symbol& s = symbols_[i];
            const TokenId id = merges_.piece_token(s.piece);
            if (id != kNoToken) {
                out.push_back(id);
                continue;
            }
            // Not a token: each character of its byte-encoded text on its own,
            // where that is a token (llama.cpp drops the rest).
            for (uint32_t j = 0; j < s.length; ++j) {
                for (char c : byte_encoding::byte_to_text(static_cast<uint8_t>(word[s.start + j]))) {
                    const TokenId single = v_.find(std::string_view(&c, 1));
                    if (single != kNoToken) out.push_back(single);
                }
            }
        }
    }

private:
    void try_add(int left, int right) {
        if (left < 0 || right < 0) return;
        const BpeMerges::Merge* merge = merges_.find(symbols_[left].piece, symbols_[right].piece);
        if (merge == nullptr) return;
        queue_.push({left, right, merge->rank, symbols_[left].length + symbols_[right].length, merge->result});
    }

    const Vocab::Impl& v_;
    const BpeMerges& merges_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
    std::string encoded_;
};

}  // namespace

void tokenize_bpe(const Vocab::Impl& v, std::string_view raw, std::vector<TokenId>& out) {
    // llama.cpp sees the text as code points: invalid bytes become U+FFFD.
    const std::string text = utf8::sanitize(raw);
    std::vector<TextPiece> words;
    v.pre_tokenizer->split(text, words);

    WordEncoder encoder(v);
    struct Cached {
        uint32_t begin;
        uint32_t count;
    };
    std::unordered_map<std::string_view, Cached> cache;
    std::vector<TokenId> store;
    for (const TextPiece& piece : words) {
        const std::string_view word(text.data() + piece.offset, piece.length);
        const auto hit = cache.find(word);
        if (hit != cache.end()) {
            out.insert(out.end(), store.begin() + hit->second.begin,
                       store.begin() + hit->second.begin + hit->second.count);
            continue;
        }
        const size_t first = out.size();
        encoder.encode(word, out);
        if (word.size() <= 64) {  // long words rarely repeat; keep the cache small
            cache.emplace(word, Cached{static_cast<uint32_t>(store.size()), static_cast<uint32_t>(out.size() - first)});
            store.insert(store.end(), out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
        }
    }
}

}  // namespace cria::vocab
