#!/usr/bin/env bash
# The checks for a machine with AMX (Intel Sapphire Rapids or later). The AMX
# kernels (docs/ARCHITECTURE.md, "Weights are packed at load time") were
# written and tested on a machine without AMX: there their tile instructions
# never ran, only the emulation did. This script, run on an AMX machine:
#   1. prints the CPU line (`cria bench`'s first line: level and AMX use);
#   2. runs the AMX tests, and fails if the hardware ones skip;
#   3. times the packed kernels at avx512vnni and amx (bench_matmul_mat's
#      matmat512-levels entries, 1 thread: read the CPU column);
#   4. runs `cria bench -p 512` at both levels on Llama-3.2-1B-shaped Q4_0
#      and Q8_0 files (random weights, real shapes), for the pp512 figures
#      that the issue compares with llama.cpp's.
#
#   scripts/amx-check.sh [BUILD_DIR] [MODEL_DIR]
# BUILD_DIR defaults to build/release (configured with -DCRIA_BUILD_BENCH=ON);
# MODEL_DIR (default /tmp/cria-amx-models) receives the generated models.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build/release}"
MODELS="${2:-/tmp/cria-amx-models}"
THREADS="${THREADS:-$(nproc)}"

cmake --build "$BUILD" --target test_matmul bench_matmul_mat bench_runtime_decode cria

echo "== 2. AMX tests"
log="$(mktemp)"
"$BUILD/tests/test_matmul" --gtest_filter='*Amx*' 2>&1 | tee "$log"
if grep -q 'SKIPPED \].*HardwareKernelEqualsEmulation' "$log"; then
    echo "amx-check: the hardware AMX tests skipped (reason above): this machine cannot run AMX" >&2
    exit 1
fi

echo "== 3. kernels, 1 thread"
"$BUILD/bench/bench_matmul_mat" --benchmark_filter='matmat512-levels/.*/1/' --benchmark_min_time=1

echo "== 1, 4. pp512 on Llama-3.2-1B-shaped files, $THREADS threads"
mkdir -p "$MODELS"
"$BUILD/bench/bench_runtime_decode" --make-models "$MODELS" llama-1b-q4_0.gguf llama-1b-q8_0.gguf
for model in llama-1b-q4_0 llama-1b-q8_0; do
    for isa in avx512vnni amx; do
        CRIA_ISA=$isa "$BUILD/cria" bench -m "$MODELS/$model.gguf" -p 512 -n 0 -r 3 -t "$THREADS" --no-peak
    done
done
