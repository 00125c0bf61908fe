// CPU feature detection and the ISA limit.

#include "cria/cpu/features.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace cria::cpu {
namespace {

// The kernel's view of the CPU, to cross-check CPUID + XCR0 decoding.
std::string proc_cpuinfo_flags() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) == 0) return line + " ";
    }
    return {};
}

bool has_flag(const std::string& flags, const std::string& name) {
    return flags.find(" " + name + " ") != std::string::npos;
}

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
    const std::string flags = proc_cpuinfo_flags();
    if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo";
    const CpuFeatures& f = cpu_features();
    // Linux hides flags whose register state it does not save, so the
    // OS-combined flags must match its list.
    EXPECT_EQ(f.avx2, has_flag(flags, "avx2"));
    EXPECT_EQ(f.fma, has_flag(flags, "fma"));
    EXPECT_EQ(f.f16c, has_flag(flags, "f16c"));
    EXPECT_EQ(f.avx512f, has_flag(flags, "avx512f"));
    EXPECT_EQ(f.avx512bw, has_flag(flags, "avx512bw"));
    EXPECT_EQ(f.avx512vl, has_flag(flags, "avx512vl"));
    EXPECT_EQ(f.avx512dq, has_flag(flags, "avx512dq"));
    EXPECT_EQ(f.avx512_vnni, has_flag(flags, "avx512_vnni"));
    EXPECT_EQ(f.avx512_bf16, has_flag(flags, "avx512_bf16"));
    EXPECT_EQ(f.avx512_vbmi, has_flag(flags, "avx512vbmi"));
    EXPECT_EQ(f.avx_vnni, has_flag(flags, "avx_vnni"));
    // AMX needs the per-process permission on top of the flag.
    if (!has_flag(flags, "amx_tile")) {
        EXPECT_FALSE(f.amx_tile);
    }
    if (f.amx_tile) {
        EXPECT_TRUE(f.amx_permission_granted);
    }
    EXPECT_FALSE(f.vendor.empty());
}

TEST(CpuFeatures, LevelsAreConsistentWithFlags) {
    const CpuFeatures& f = cpu_features();
    const Isa level = detected_isa();
    if (level >= Isa::Avx2) {
        EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
    }
    if (level >= Isa::Avx512) {
        EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq);
    }
    if (level >= Isa::Avx512Vnni) {
        EXPECT_TRUE(f.avx512_vnni);
    }
    if (level >= Isa::Amx) {
        EXPECT_TRUE(f.amx_tile && f.amx_int8 && f.amx_permission_granted);
    }
    if (f.avx2 && f.fma && f.f16c) {
        EXPECT_GE(level, Isa::Avx2);
    }
    std::printf("[ cpu ] %s\n", describe_cpu().c_str());
}

TEST(IsaLimit, ForcingLowersAndClampsAndRestores) {
    const Isa original = best_isa();
    {
        ScopedIsaLimit limit(Isa::Scalar);
        EXPECT_EQ(best_isa(), Isa::Scalar);
        {
            // Asking for more than the machine has gives the machine's level.
            ScopedIsaLimit high(Isa::Amx);
            EXPECT_EQ(best_isa(), std::min(detected_isa(), original));
        }
        EXPECT_EQ(best_isa(), Isa::Scalar);
    }
    EXPECT_EQ(best_isa(), original);
    set_isa_limit(Isa::Scalar);
    EXPECT_EQ(best_isa(), Isa::Scalar);
    clear_isa_limit();
    EXPECT_EQ(best_isa(), original);
}

TEST(IsaLimit, OptionalExtensionsFollowTheLimit) {
    ScopedIsaLimit limit(Isa::Scalar);
    EXPECT_FALSE(uses_avx512_bf16());
    EXPECT_FALSE(uses_avx512_vbmi());
    EXPECT_FALSE(uses_avx_vnni());
}

TEST(IsaNames, RoundTrip) {
    for (int i = 0; i < kIsaCount; ++i) {
        const Isa isa = static_cast<Isa>(i);
        EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
    }
    EXPECT_EQ(isa_from_name("AVX512VNNI"), Isa::Avx512Vnni);
    EXPECT_FALSE(isa_from_name("sse2").has_value());
    EXPECT_FALSE(isa_from_name("").has_value());
}

}  // namespace
}  // namespace cria::cpu

namespace cria::cpu {
namespace {

// CRIA_ISA is read once per process, so it is checked in a child: this test
// binary runs itself with the variable set and a filter selecting
// IsaEnv.PrintLevel, which prints the level it sees.
TEST(IsaEnv, PrintLevel) {
    if (std::getenv("CRIA_ISA") == nullptr) GTEST_SKIP() << "only meaningful in the child process";
    try {
        std::printf("LEVEL=%s\n", std::string(isa_name(best_isa())).c_str());
    } catch (const std::exception& e) {
        std::printf("ERROR=%s\n", e.what());
    }
}

std::string run_child(const std::string& env_value) {
    const std::string cmd = "CRIA_ISA='" + env_value + "' /proc/" + std::to_string(getpid()) +
                            "/exe --gtest_filter=IsaEnv.PrintLevel 2>&1";
    std::string output;
    if (FILE* pipe = popen(cmd.c_str(), "r")) {
        char buf[512];
        while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
        pclose(pipe);
    }
    return output;
}

TEST(IsaEnv, EnvironmentLowersTheLevel) {
    if (std::getenv("CRIA_ISA") != nullptr) GTEST_SKIP() << "already in a child";
    EXPECT_NE(run_child("scalar").find("LEVEL=scalar\n"), std::string::npos);
    if (isa_supported(Isa::Avx2)) {
        EXPECT_NE(run_child("AVX2").find("LEVEL=avx2\n"), std::string::npos);
    }
    // More than the machine has: clamped to the machine's level.
    const std::string clamped = "LEVEL=" + std::string(isa_name(detected_isa())) + "\n";
    EXPECT_NE(run_child("amx").find(clamped), std::string::npos);
    EXPECT_NE(run_child("sse9").find("ERROR=CRIA_ISA=sse9 is not a known"), std::string::npos);
}

}  // namespace
}  // namespace cria::cpu
