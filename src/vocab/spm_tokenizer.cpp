// SentencePiece BPE ("llama" vocabs): start from UTF-8 characters and keep
// merging the adjacent pair whose joined text is the best-scoring token.
// Characters that never became a token fall back to byte tokens <0xXX>.

#include <queue>

#include "vocab/utf8.h"
#include "vocab/vocab_impl.h"

namespace cria::vocab {

namespace {

struct Symbol {
    int prev;
    int next;
    size_t start;
    size_t length;  // 0 once merged into its left neighbour
};

struct Bigram {
    int left;
    int right;
    float score;
    size_t length;
};

// Highest score first; on ties the leftmost pair (llama.cpp's order).
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

namespace {

void tokenize_segment(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out) {
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
        const size_t length =
            std::min(utf8::sequence_length(static_cast<unsigned char>(text[offset])), text.size() - offset);
        const int index = static_cast<int>(symbols.size());
        symbols.push_back({index - 1, offset + length == text.size() ? -1 : index + 1, offset, length});
        offset += length;
    }

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t length = symbols[left].length + symbols[right].length;
        const TokenId id = v.find(text.substr(symbols[left].start, length));
        if (id == kNoToken) return;
        queue.push({left, right, v.tokens[static_cast<size_t>(id)].score, length});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram bigram = queue.top();
        queue.pop();
        Symbol& left = symbols[bigram.left];
        Symbol& right = symbols[bigram.right];
        // Stale: one side was merged away or grew since the pair was queued.
        if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) continue;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = bigram.left;
        try_add(left.prev, bigram.left);
        try_add(bigram.left, left.next);
    }

    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
        const Symbol& s = symbols[i];
        const TokenId id = v.find(text.substr(s.start, s.length));
        if (id != kNoToken) {
            out.push_back(id);
            continue;
        }
        for (size_t j = 0; j < s.length; ++j) {
            const TokenId byte = v.spm_byte_token(static_cast<uint8_t>(text[s.start + j]));
            if (byte != kNoToken) out.push_back(byte);
        }
    }
}

}  // namespace

void tokenize_spm(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out) {
    // A byte that no multi-character token contains can never merge with its
    // neighbours, so the text on either side of it is tokenized on its own.
    // (With Llama's vocab that is the newline: a 4 MB text becomes many short
    // lines and the merge queue stays small.)
    // Only symbol starts count: after a malformed lead byte the symbol spans
    // the next bytes whatever they are, exactly as the unsplit text would.
    size_t start = 0;
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (!v.spm_isolated[c]) {
            i += std::min(utf8::sequence_length(c), text.size() - i);
            continue;
        }
        if (i > start) tokenize_segment(v, text.substr(start, i - start), out);
        tokenize_segment(v, text.substr(i, 1), out);
        start = ++i;
    }
    if (start < text.size()) tokenize_segment(v, text.substr(start), out);
}

}  // namespace cria::vocab
