// libFuzzer target: the GGUF reader must turn any byte string into either a
// valid File or one cria::Error, never a crash, hang or sanitizer report.
// Whatever parses is then walked fully (every value, getter and tensor byte)
// so a File that passed validation but is inconsistent shows up too.

#include <cstddef>
#include <cstdint>
#include <span>

#include "cria/core/error.h"
#include "cria/gguf/file.h"

namespace {

// Sums bytes so the reads cannot be optimised away.
volatile uint64_t g_sink;

void walk(const cria::gguf::File& file) {
    uint64_t sum = 0;
    for (const auto& [key, value] : file.metadata()) {
        sum += value.to_display_string(16).size();
        sum += value.size();
        if (value.is_array() && value.size() > 0) sum += value.at(value.size() - 1).to_display_string().size();
        try {
            sum += file.get_u32(key).value_or(0);
        } catch (const cria::Error&) {
        }
        try {
            sum += file.get_string(key).value_or("").size();
        } catch (const cria::Error&) {
        }
        sum += file.find(key) == &value;
    }
    for (const auto& t : file.tensors()) {
        const auto bytes = file.tensor_data(t);
        if (!bytes.empty()) sum += bytes.front() + bytes.back();
        sum += file.find_tensor(t.name) == &t;
    }
    g_sink = sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto file = cria::gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf");
        walk(*file);
    } catch (const cria::Error&) {
        // A clear rejection is the expected outcome for most inputs.
    }
    return 0;
}
