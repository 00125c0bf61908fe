// libFuzzer target: the safetensors reader must turn any byte string into
// either a validated file or one cria::Error, never a crash, hang or sanitizer
// report. Whatever parses is walked fully: every tensor's bytes are read and
// float tensors converted, so offsets that passed validation but point
// outside the data show up too. A second target of the same input is the
// SentencePiece protobuf reader.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cria/convert/safetensors.h"
#include "cria/convert/tokenizer_import.h"
#include "cria/core/error.h"

namespace {
volatile uint64_t g_sink;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace cria::convert;
    try {
        auto file = SafetensorsFile::parse(std::span<const uint8_t>(data, size), "fuzz.safetensors");
        uint64_t sum = 0;
        for (const StTensor& t : file->tensors()) {
            for (uint8_t b : file->data(t)) sum += b;
            if (t.dtype == StDtype::F32 || t.dtype == StDtype::F16 || t.dtype == StDtype::BF16 ||
                t.dtype == StDtype::F64) {
                if (t.n_elements() <= (1u << 20)) sum += file->to_f32(t).size();
            }
            sum += file->find(t.name) == &t;
        }
        for (const auto& [k, v] : file->metadata()) sum += k.size() + v.size();
        g_sink = sum;
    } catch (const cria::Error&) {
    }
    try {
        const SentencePieceModel m =
            parse_sentencepiece_model(std::string(reinterpret_cast<const char*>(data), size), "fuzz.model");
        g_sink = m.pieces.size();
    } catch (const cria::Error&) {
    }
    return 0;
}
