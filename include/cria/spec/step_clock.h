#pragma once
// The clock that times a speculative step's drafts and target decodes, in
// milliseconds from any fixed origin. Adaptive drafting decides from these
// times (adaptive.h) and the speculation metrics report them. Empty (the
// default): std::chrono::steady_clock. A test gives a clock of its own whose
// time moves as it says, so that what it checks is the controller's
// decisions, not how loaded the machine was while it ran.

#include <chrono>
#include <functional>

namespace cria::spec {

using StepClock = std::function<double()>;

// Now, by `clock`, or by steady_clock when it is empty.
inline double clock_ms(const StepClock& clock) {
    if (clock) return clock();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace cria::spec
