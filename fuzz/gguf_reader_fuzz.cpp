// libFuzzer target: the GGUF reader must turn any byte string into either a
// valid File or one cria::Error, never a crash, hang or sanitizer report.
// Whatever parses is then walked fully (every value, getter and tensor byte)
// so a File that passed validation but is inconsistent shows up too, and is
// written back with the writer and read again: the copy must hold the same
// metadata and tensors.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"

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

// Writes `file` with the writer, reads the copy, and aborts when they differ.
void round_trip(const cria::gguf::File& file) {
    static const std::string path = "/dev/shm/cria-gguf-fuzz-" + std::to_string(::getpid()) + ".gguf";
    cria::gguf::write_copy(file, path);  // the writer must accept whatever the reader accepted
    auto copy = cria::gguf::File::open(path, cria::gguf::LoadMode::None);
    std::remove(path.c_str());
    if (copy->metadata() != file.metadata() || copy->tensors().size() != file.tensors().size()) std::abort();
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        const auto& a = file.tensors()[i];
        const auto& b = copy->tensors()[i];
        if (a.name != b.name || a.type != b.type || a.ne != b.ne || a.n_dims != b.n_dims) std::abort();
        const auto x = file.tensor_data(a), y = copy->tensor_data(b);
        if (x.size() != y.size() || (!x.empty() && std::memcmp(x.data(), y.data(), x.size()) != 0)) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto file = cria::gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf");
        walk(*file);
        try {
            round_trip(*file);
        } catch (const cria::Error& e) {
            // The writer refused (or failed on) something the reader accepted.
            std::fprintf(stderr, "round trip failed: %s\n", e.what());
            std::abort();
        }
    } catch (const cria::Error&) {
        // A clear rejection is the expected outcome for most inputs.
    }
    return 0;
}
