#pragma once
// What this CPU can do, and which instruction-set level the kernels may use.
//
// Kernels come in levels (Isa): a plain C++ reference, AVX2 (+FMA+F16C),
// AVX-512 (F/BW/VL/DQ), AVX-512 with VNNI, and AMX. The level a kernel runs at
// is best_isa(): the highest level both the hardware and the operating system
// support, lowered by the environment variable CRIA_ISA (read once) or by
// set_isa_limit() (for tests). A limit above what the machine has is clamped
// down to the machine's level: forcing can only ever remove instructions.
//
// Optional extensions that do not define a level (AVX512-BF16, AVX512-VBMI,
// AVX-VNNI) are reported in CpuFeatures; a kernel may use one only when the
// level it runs at includes the extension's base (see uses_* helpers below).

#include <optional>
#include <string>
#include <string_view>

namespace cria::cpu {

struct CpuFeatures {
    std::string vendor;  // "GenuineIntel", "AuthenticAMD", ...
    std::string brand;   // processor brand string, trimmed

    // Instruction support as CPUID reports it, already combined with the
    // operating system's permission (XCR0): a flag is true only when the
    // instructions can actually run in this process.
    bool sse42 = false;
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512cd = false;
    bool avx512_vnni = false;
    bool avx512_bf16 = false;
    bool avx512_vbmi = false;
    bool avx_vnni = false;  // the 256-bit VEX-encoded VNNI of Alder Lake and later
    bool amx_tile = false;
    bool amx_int8 = false;
    bool amx_bf16 = false;

    // What CPUID says before asking the OS (for diagnostics).
    bool cpu_has_avx512f = false;
    bool cpu_has_amx_tile = false;
    // Operating-system state saving (XCR0) for each register file.
    bool os_saves_avx = false;     // XMM + YMM
    bool os_saves_avx512 = false;  // opmask + ZMM
    bool os_saves_amx = false;     // XTILECFG + XTILEDATA
    // Linux hands out AMX tile state only on request (arch_prctl
    // ARCH_REQ_XCOMP_PERM); this says whether our request was granted.
    bool amx_permission_granted = false;
};

// Detected once, on first call; thread-safe.
const CpuFeatures& cpu_features();

// Instruction-set levels, lowest first. Each includes the ones below it.
enum class Isa : int {
    Scalar = 0,      // portable C++, the reference for every kernel
    Avx2 = 1,        // AVX2 + FMA + F16C
    Avx512 = 2,      // AVX-512 F + BW + VL + DQ
    Avx512Vnni = 3,  // Avx512 + AVX512-VNNI
    Amx = 4,         // Avx512Vnni + AMX tile + int8 (and OS permission)
};

inline constexpr int kIsaCount = 5;

// The highest level this machine (hardware + OS) supports, ignoring limits.
Isa detected_isa();

// The level kernels should use now: detected_isa() lowered by CRIA_ISA and
// by set_isa_limit(). Cheap (one relaxed atomic load after the first call).
// Throws cria::Error on first use if CRIA_ISA holds an unknown name.
Isa best_isa();

// Caps best_isa() at `limit` (clamped to detected_isa()). Process-wide; meant
// for tests and benchmarks that compare levels. Not for use while another
// thread runs kernels.
void set_isa_limit(Isa limit);
// Removes a set_isa_limit() cap, returning to the CRIA_ISA / detected level.
void clear_isa_limit();

// True when the machine can run kernels of level `isa`.
inline bool isa_supported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(detected_isa()); }

// "scalar", "avx2", "avx512", "avx512vnni", "amx".
std::string_view isa_name(Isa isa);
// Parses those names, case-insensitively.
std::optional<Isa> isa_from_name(std::string_view name);

// Optional extensions, usable only at a level that includes their base.
inline bool uses_avx512_bf16() { return best_isa() >= Isa::Avx512 && cpu_features().avx512_bf16; }
inline bool uses_avx512_vbmi() { return best_isa() >= Isa::Avx512 && cpu_features().avx512_vbmi; }
inline bool uses_avx_vnni() { return best_isa() >= Isa::Avx2 && cpu_features().avx_vnni; }

// For tests: sets a limit for the lifetime of the object, then restores the
// previous one.
class ScopedIsaLimit {
public:
    explicit ScopedIsaLimit(Isa limit);
    ~ScopedIsaLimit();
    ScopedIsaLimit(const ScopedIsaLimit&) = delete;
    ScopedIsaLimit& operator=(const ScopedIsaLimit&) = delete;

private:
    int previous_;
};

// One line describing the CPU and the levels, for logs and `cria` diagnostics.
std::string describe_cpu();

}  // namespace cria::cpu
