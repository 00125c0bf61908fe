// CPU feature detection through CPUID and XGETBV, plus the ISA-level limit.

#include "cria/cpu/features.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cria/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CRIA_X86 1
#endif

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cria::cpu {
namespace {

#if CRIA_X86
struct Regs {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf) {
    Regs r;
    __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
    return r;
}

bool bit(unsigned value, int n) { return ((value >> n) & 1u) != 0; }

// XCR0 tells which register files the OS saves on a context switch. XGETBV
// is written as raw asm so this file needs no -mxsave.
unsigned long long read_xcr0() {
    unsigned eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<unsigned long long>(edx) << 32) | eax;
}

// Linux (5.16+) requires each process to ask for the AMX tile-data state.
bool request_amx_permission() {
#if defined(__linux__)
    constexpr long kArchGetXcompPerm = 0x1022;
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long long permitted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
    return ((permitted >> kXfeatureXtiledata) & 1u) != 0;
#else
    return false;
#endif
}

std::string trim(std::string s) {
    auto not_space = [](unsigned char c) { return !std::isspace(c) && c != 0; };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    return s;
}
#endif

CpuFeatures detect() {
    CpuFeatures f;
#if CRIA_X86
    const Regs leaf0 = cpuid(0, 0);
    char vendor[13] = {};
    std::memcpy(vendor + 0, &leaf0.ebx, 4);
    std::memcpy(vendor + 4, &leaf0.edx, 4);
    std::memcpy(vendor + 8, &leaf0.ecx, 4);
    f.vendor = vendor;
    const unsigned max_leaf = leaf0.eax;

    const unsigned max_ext = cpuid(0x80000000u, 0).eax;
    if (max_ext >= 0x80000004u) {
        char brand[49] = {};
        for (unsigned i = 0; i < 3; ++i) {
            const Regs r = cpuid(0x80000002u + i, 0);
            std::memcpy(brand + 16 * i + 0, &r.eax, 4);
            std::memcpy(brand + 16 * i + 4, &r.ebx, 4);
            std::memcpy(brand + 16 * i + 8, &r.ecx, 4);
            std::memcpy(brand + 16 * i + 12, &r.edx, 4);
        }
        f.brand = trim(brand);
    }

    const Regs leaf1 = max_leaf >= 1 ? cpuid(1, 0) : Regs{};
    const bool osxsave = bit(leaf1.ecx, 27);
    const unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
    f.os_saves_avx = (xcr0 & 0x6) == 0x6;                // SSE + AVX state
    f.os_saves_avx512 = f.os_saves_avx && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
    f.os_saves_amx = (xcr0 & 0x60000) == 0x60000;        // XTILECFG + XTILEDATA

    f.sse42 = bit(leaf1.ecx, 20);
    f.avx = bit(leaf1.ecx, 28) && f.os_saves_avx;
    f.fma = bit(leaf1.ecx, 12) && f.os_saves_avx;
    f.f16c = bit(leaf1.ecx, 29) && f.os_saves_avx;

    const Regs leaf7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
    const Regs leaf7_1 = (max_leaf >= 7 && leaf7.eax >= 1) ? cpuid(7, 1) : Regs{};
    f.avx2 = bit(leaf7.ebx, 5) && f.os_saves_avx;
    f.cpu_has_avx512f = bit(leaf7.ebx, 16);
    f.avx512f = f.cpu_has_avx512f && f.os_saves_avx512;
    f.avx512dq = bit(leaf7.ebx, 17) && f.os_saves_avx512;
    f.avx512cd = bit(leaf7.ebx, 28) && f.os_saves_avx512;
    f.avx512bw = bit(leaf7.ebx, 30) && f.os_saves_avx512;
    f.avx512vl = bit(leaf7.ebx, 31) && f.os_saves_avx512;
    f.avx512_vbmi = bit(leaf7.ecx, 1) && f.os_saves_avx512;
    f.avx512_vnni = bit(leaf7.ecx, 11) && f.os_saves_avx512;
    f.avx_vnni = bit(leaf7_1.eax, 4) && f.os_saves_avx;
    f.avx512_bf16 = bit(leaf7_1.eax, 5) && f.os_saves_avx512;
    f.cpu_has_amx_tile = bit(leaf7.edx, 24);
    const bool amx_cpu = f.cpu_has_amx_tile && f.os_saves_amx;
    // Ask for tile data only when the CPU and OS could provide it.
    f.amx_permission_granted = amx_cpu && request_amx_permission();
    f.amx_tile = amx_cpu && f.amx_permission_granted;
    f.amx_int8 = f.amx_tile && bit(leaf7.edx, 25);
    f.amx_bf16 = f.amx_tile && bit(leaf7.edx, 22);
#endif
    return f;
}

Isa level_of(const CpuFeatures& f) {
    if (!(f.avx2 && f.fma && f.f16c)) return Isa::Scalar;
    if (!(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) return Isa::Avx2;
    if (!f.avx512_vnni) return Isa::Avx512;
    if (!(f.amx_tile && f.amx_int8)) return Isa::Avx512Vnni;
    return Isa::Amx;
}

// -1 = no set_isa_limit() cap.
std::atomic<int> g_api_limit{-1};
// The level from detection and CRIA_ISA; -1 until first computed.
std::atomic<int> g_base_level{-1};
std::mutex g_base_mutex;

int base_level() {
    int level = g_base_level.load(std::memory_order_acquire);
    if (level >= 0) return level;
    std::lock_guard lock(g_base_mutex);
    level = g_base_level.load(std::memory_order_relaxed);
    if (level >= 0) return level;
    level = static_cast<int>(detected_isa());
    if (const char* env = std::getenv("CRIA_ISA"); env != nullptr && *env != '\0') {
        const auto requested = isa_from_name(env);
        if (!requested) {
            throw Error(std::string("CRIA_ISA=") + env +
                        " is not a known instruction-set level (use scalar, avx2, avx512, avx512vnni or amx)");
        }
        level = std::min(level, static_cast<int>(*requested));
    }
    g_base_level.store(level, std::memory_order_release);
    return level;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

Isa detected_isa() {
    static const Isa level = level_of(cpu_features());
    return level;
}

Isa best_isa() {
    const int base = base_level();
    const int cap = g_api_limit.load(std::memory_order_relaxed);
    return static_cast<Isa>(cap >= 0 ? std::min(base, cap) : base);
}

void set_isa_limit(Isa limit) {
    g_api_limit.store(std::min(static_cast<int>(limit), static_cast<int>(detected_isa())),
                      std::memory_order_relaxed);
}

void clear_isa_limit() { g_api_limit.store(-1, std::memory_order_relaxed); }

ScopedIsaLimit::ScopedIsaLimit(Isa limit) : previous_(g_api_limit.load(std::memory_order_relaxed)) {
    set_isa_limit(limit);
}

ScopedIsaLimit::~ScopedIsaLimit() { g_api_limit.store(previous_, std::memory_order_relaxed); }

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
        case Isa::Avx512Vnni: return "avx512vnni";
        case Isa::Amx: return "amx";
    }
    return "unknown";
}

std::optional<Isa> isa_from_name(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (int i = 0; i < kIsaCount; ++i) {
        if (isa_name(static_cast<Isa>(i)) == lower) return static_cast<Isa>(i);
    }
    return std::nullopt;
}

std::string describe_cpu() {
    const CpuFeatures& f = cpu_features();
    std::string s = f.brand.empty() ? f.vendor : f.brand;
    auto add = [&s](bool on, const char* name) {
        if (on) {
            s += ' ';
            s += name;
        }
    };
    s += ":";
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.f16c, "f16c");
    add(f.avx512f, "avx512f");
    add(f.avx512bw, "avx512bw");
    add(f.avx512vl, "avx512vl");
    add(f.avx512dq, "avx512dq");
    add(f.avx512_vnni, "avx512vnni");
    add(f.avx512_bf16, "avx512bf16");
    add(f.avx512_vbmi, "avx512vbmi");
    add(f.avx_vnni, "avxvnni");
    add(f.amx_tile, "amx-tile");
    add(f.amx_int8, "amx-int8");
    add(f.amx_bf16, "amx-bf16");
    if (f.cpu_has_amx_tile && !f.amx_tile) s += " (amx present but not usable: OS state or permission missing)";
    s += "; detected level ";
    s += isa_name(detected_isa());
    s += ", using ";
    s += isa_name(best_isa());
    return s;
}

}  // namespace cria::cpu
