#pragma once
// The random numbers behind every stochastic sampler (dist, XTC, mirostat).
//
// std::mt19937's output sequence is fixed by the C++ standard, but the
// standard distributions are not (libstdc++ and libc++ differ), so we draw
// uniforms ourselves:
//   uniform_double(): 53 random bits from two 32-bit outputs, as in the
//                     reference mt19937 genrand_res53: ((a>>5)*2^26 + (b>>6)) / 2^53, in [0, 1).
//   uniform_float():  the top 24 bits of one output / 2^24, in [0, 1).
// A fixed seed therefore gives the same sequence on every platform.
// Seeding: std::mt19937(seed) directly; kRandomSeed (0xFFFFFFFF, llama.cpp's
// LLAMA_DEFAULT_SEED) asks for a fresh seed from std::random_device.

#include <cstdint>
#include <random>

namespace cria::sampling {

inline constexpr uint32_t kRandomSeed = 0xFFFFFFFFu;

// kRandomSeed -> a random seed; any other value is returned unchanged.
uint32_t resolve_seed(uint32_t seed);

class Rng {
public:
    explicit Rng(uint32_t seed = kRandomSeed) { reseed(seed); }

    // Restarts the sequence (reset() of the samplers). kRandomSeed draws a new seed.
    void reseed(uint32_t seed);
    uint32_t seed() const { return seed_; }            // as requested
    uint32_t seed_in_use() const { return seed_cur_; } // after resolving kRandomSeed

    double uniform_double();
    float uniform_float();
    uint32_t next_u32() { return static_cast<uint32_t>(engine_()); }

private:
    uint32_t seed_ = kRandomSeed;
    uint32_t seed_cur_ = 0;
    std::mt19937 engine_;
};

}  // namespace cria::sampling
