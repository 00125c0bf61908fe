#pragma once
// The machine's measured limits, for "how close to the limit does this run"
// figures (cria bench): a short probe of the int8 dot-product peak
// (AVX512-VNNI vpdpbusd), the BF16 dot-product peak (AVX512-BF16 vdpbf16ps),
// the f32 FMA peak, and the rate at which memory can be read, each on
// n_threads threads at once.
//
// Peaks are measured, not computed from a data sheet: clocks under load, how
// many vector pipes a core has for each instruction, and what the machine's
// other tenants leave are all part of what a kernel can reach. A rate is the
// best of a few short trials, so a trial that lost its core to another
// process does not lower it. An instruction the CPU lacks gives 0.
//
// The read rate is the wall-clock rate of all threads reading their part of
// one 256 MiB buffer at once (pseudo-random contents, so no page merging
// makes it a cache rate), best of 5 passes: the same pattern as
// bench_membw_triad's read-sum.

#include <cstddef>

namespace cria::cpu {

struct PeakRates {
    double int8_ops_per_s = 0;  // vpdpbusd: 2 ops (multiply, add) per int8 product
    double bf16_ops_per_s = 0;  // vdpbf16ps: 2 ops per bf16 product
    double f32_ops_per_s = 0;   // vfmadd: 2 ops per f32 product
    double read_bytes_per_s = 0;  // streaming reads of a buffer far larger than the caches
    int n_threads = 0;
};

// Runs the probes (about half a second in all, most of it the first touch of
// the memory probe's buffer). n_threads below 1 counts as 1.
PeakRates measure_peaks(int n_threads);

// Bytes per second that n_threads threads read together from a buffer of
// `bytes` (split evenly, rounded down to 128-byte lines, at least one line
// each), the best of `passes` timed passes. The caller's thread reads too.
// n_threads and passes below 1 count as 1.
double measure_read_bandwidth(int n_threads, size_t bytes, int passes);

}  // namespace cria::cpu
