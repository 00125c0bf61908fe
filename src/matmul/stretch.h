#pragma once
// A stretch of consecutive task indices that its owner takes from the front
// and helpers take from the back (matmul's decode split, run_in_stretches):
// the owner's reads stay one forward stream and a helper's never interleave
// with them. Lock-free; every index in [begin, end) is handed out exactly
// once, whoever asks. Indices must fit in 32 bits.

#include <atomic>
#include <cstdint>

namespace cria::matmul::detail {

class Stretch {
public:
    // Hands out [begin, end) from now on; not safe while others take.
    void reset(int64_t begin, int64_t end) {
        ends_.store((static_cast<uint64_t>(begin) << 32) | static_cast<uint64_t>(end), std::memory_order_relaxed);
    }
    // The next task from the front (the owner's end), or -1 when none is left.
    int64_t take_front() { return take(true); }
    // The last task (a helper's end), or -1 when none is left.
    int64_t take_back() { return take(false); }

private:
    int64_t take(bool front) {
        uint64_t ends = ends_.load(std::memory_order_relaxed);
        for (;;) {
            const uint64_t begin = ends >> 32, end = ends & 0xFFFFFFFFu;
            if (begin >= end) return -1;
            const uint64_t next = front ? ends + (uint64_t{1} << 32) : ends - 1;
            if (ends_.compare_exchange_weak(ends, next, std::memory_order_relaxed))
                return static_cast<int64_t>(front ? begin : end - 1);
        }
    }
    // [begin, end) of the tasks not yet taken, packed: begin << 32 | end.
    alignas(64) std::atomic<uint64_t> ends_{0};
};

}  // namespace cria::matmul::detail
