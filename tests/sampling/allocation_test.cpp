// Steady-state sampling allocates nothing: the candidate buffer and every
// sampler's scratch space are reused between calls. Counted by replacing the
// global operator new for this test binary (counting only while armed).

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <cstdlib>
#include <new>
#include <random>

#include "cria/sampling/params.h"

namespace {
std::atomic<bool> g_armed{false};
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
    if (g_armed.load(std::memory_order_relaxed)) {
        g_allocations.fetch_add(1, std::memory_order_relaxed);
    }
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    if (g_armed.load(std::memory_order_relaxed)) {
        g_allocations.fetch_add(1, std::memory_order_relaxed);
    }
    return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace cria::sampling {
namespace {

long allocations_while(const std::function<void()>& work) {
    g_allocations = 0;
    g_armed = true;
    work();
    g_armed = false;
    return g_allocations.load();
}

TEST(Allocation, DefaultChainSamplesWithoutAllocating) {
    const size_t n_vocab = 20000;
    std::mt19937 gen(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(n_vocab);
    for (float& l : logits) {
        l = normal(gen);
    }
    SamplingParams params;
    params.seed = 17;
    params.dry_sequence_breakers.clear();
    params.penalty_repeat = 1.1f;  // penalties on, so their scratch space is exercised
    params.typ_p = 0.9f;           // and typical's
    params.xtc_probability = 0.5f;
    ChainContext context;
    context.n_vocab = static_cast<int32_t>(n_vocab);
    Chain chain = build_chain(params, context);
    for (TokenId t : {1, 2, 3, 2, 1}) {
        chain.accept(t);
    }
    for (int i = 0; i < 3; ++i) {  // warm-up: buffers grow to size
        chain.sample(logits);
    }
    const long count = allocations_while([&] {
        for (int i = 0; i < 20; ++i) {
            chain.sample(logits);
        }
    });
    EXPECT_EQ(count, 0);
}

TEST(Allocation, CounterWorks) {
    // The counter must see an allocation, or the test above proves nothing.
    const long count = allocations_while([] {
        auto* p = new std::vector<int>(100);
        delete p;
    });
    EXPECT_GE(count, 2);
}

}  // namespace
}  // namespace cria::sampling
