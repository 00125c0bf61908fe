#pragma once
// A test fixture that runs each test once per (ISA level, thread count):
// CpuOps under a forced ISA limit and a pool of 1 or 3 threads, plus the
// double-precision ReferenceOps to compare with.

#include <memory>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/ops/cpu_ops.h"
#include "ops/reference_ops.h"
#include "ops_test_util.h"

namespace cria::ops::test {

struct Case {
    cpu::Isa isa;
    int threads;
};

inline std::vector<Case> cases() {
    std::vector<Case> out;
    for (cpu::Isa isa : test::runnable_isas()) {
        for (int threads : {1, 3}) out.push_back({isa, threads});
    }
    return out;
}

class OpsFixture : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        limit_ = std::make_unique<cpu::ScopedIsaLimit>(GetParam().isa);
        pool_ = std::make_unique<cpu::ThreadPool>(GetParam().threads);
        ops_ = std::make_unique<CpuOps>(*pool_);
    }
    std::unique_ptr<cpu::ScopedIsaLimit> limit_;
    std::unique_ptr<cpu::ThreadPool> pool_;
    std::unique_ptr<CpuOps> ops_;
    ReferenceOps ref_;
};

}  // namespace cria::ops::test

#define CRIA_OPS_INSTANTIATE(Suite)                                                                              \
    INSTANTIATE_TEST_SUITE_P(AllIsas, Suite, ::testing::ValuesIn(::cria::ops::test::cases()), [](const auto& info) { \
        return std::string(::cria::cpu::isa_name(info.param.isa)) + "_threads" + std::to_string(info.param.threads); \
    })
