// A tokenizer.model is a protobuf (sentencepiece_model.proto, ModelProto).
// Only three things are needed from it, so rather than depending on
// libsentencepiece or libprotobuf this reads the wire format directly:
//   ModelProto:      1 = repeated SentencePiece pieces, 3 = NormalizerSpec
//   SentencePiece:   1 = piece (string), 2 = score (float), 3 = type (enum)
//   NormalizerSpec:  3 = add_dummy_prefix (bool)
// Unknown fields are skipped, as protobuf readers do.

#include <cstring>

#include "cria/convert/tokenizer_import.h"
#include "cria/core/error.h"

namespace cria::convert {
namespace {

class WireReader {
public:
    WireReader(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}
    bool done() const { return pos_ >= bytes_.size(); }

    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= bytes_.size()) fail("a varint runs past the end");
            const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("a varint is longer than 10 bytes");
    }
    std::string_view bytes(uint64_t n) {
        if (n > bytes_.size() - pos_) fail("a field of " + std::to_string(n) + " bytes runs past the end");
        std::string_view s = bytes_.substr(pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return s;
    }
    // Skips a field of `wire` type whose tag was just read.
    void skip(uint32_t wire) {
        switch (wire) {
            case 0: varint(); break;
            case 1: bytes(8); break;
            case 2: bytes(varint()); break;
            case 5: bytes(4); break;
            default: fail("unsupported wire type " + std::to_string(wire));
        }
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("tokenizer.model '" + name_ + "': not a valid SentencePiece model: " + what + " (byte " +
                    std::to_string(pos_) + ")");
    }

private:
    std::string_view bytes_;
    const std::string& name_;
    size_t pos_ = 0;
};

SentencePieceModel::Piece parse_piece(std::string_view bytes, const std::string& name) {
    WireReader in(bytes, name);
    SentencePieceModel::Piece p;
    while (!in.done()) {
        const uint64_t tag = in.varint();
        const uint32_t field = static_cast<uint32_t>(tag >> 3), wire = static_cast<uint32_t>(tag & 7);
        if (field == 1 && wire == 2) {
            p.text = std::string(in.bytes(in.varint()));
        } else if (field == 2 && wire == 5) {
            const std::string_view b = in.bytes(4);
            std::memcpy(&p.score, b.data(), 4);
        } else if (field == 3 && wire == 0) {
            p.type = static_cast<int32_t>(in.varint());
            if (p.type < 1 || p.type > 6) in.fail("piece type " + std::to_string(p.type) + " is not 1..6");
        } else {
            in.skip(wire);
        }
    }
    return p;
}

}  // namespace

SentencePieceModel parse_sentencepiece_model(const std::string& bytes, const std::string& name) {
    WireReader in(bytes, name);
    SentencePieceModel model;
    while (!in.done()) {
        const uint64_t tag = in.varint();
        const uint32_t field = static_cast<uint32_t>(tag >> 3), wire = static_cast<uint32_t>(tag & 7);
        if (field == 1 && wire == 2) {
            model.pieces.push_back(parse_piece(in.bytes(in.varint()), name));
        } else if (field == 3 && wire == 2) {
            WireReader spec(in.bytes(in.varint()), name);
            while (!spec.done()) {
                const uint64_t t = spec.varint();
                if ((t >> 3) == 3 && (t & 7) == 0) model.add_dummy_prefix = spec.varint() != 0;
                else spec.skip(static_cast<uint32_t>(t & 7));
            }
        } else {
            in.skip(wire);
        }
    }
    if (model.pieces.empty()) throw Error("tokenizer.model '" + name + "': holds no pieces");
    return model;
}

}  // namespace cria::convert
