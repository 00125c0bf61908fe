#include "cria/sampling/rng.h"

#include <chrono>

namespace cria::sampling {

uint32_t resolve_seed(uint32_t seed) {
    if (seed != kRandomSeed) {
        return seed;
    }
    std::random_device device;
    // A deterministic random_device (entropy 0) is no better than the clock.
    if (device.entropy() == 0) {
        return static_cast<uint32_t>(std::chrono::system_clock::now().time_since_epoch().count());
    }
    return device();
}

void Rng::reseed(uint32_t seed) {
    seed_ = seed;
    seed_cur_ = resolve_seed(seed);
    engine_.seed(seed_cur_);
}

double Rng::uniform_double() {
    const uint32_t a = next_u32() >> 5;  // 27 bits
    const uint32_t b = next_u32() >> 6;  // 26 bits
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) * (1.0 / 9007199254740992.0);
}

float Rng::uniform_float() {
    return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f);
}

}  // namespace cria::sampling
