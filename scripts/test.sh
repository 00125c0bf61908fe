#!/usr/bin/env bash
# The whole test suite: installs dependencies, then builds and runs every test
# twice, once optimised (Release) and once under AddressSanitizer +
# UndefinedBehaviorSanitizer, then checks that `cmake --install` gives a
# usable library. Exits non-zero on the first failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# When ccache is installed, paths relative to the checkout let every clone share its cache.
export CCACHE_BASEDIR="$root"
jobs=$(nproc)
"$root/scripts/install-deps.sh"

step() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; }

step "Release build"
cmake -S "$root" -B "$root/build/release" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build/release" -j "$jobs"
step "Release tests"
ctest --test-dir "$root/build/release" --output-on-failure -j "$jobs"

step "AddressSanitizer + UndefinedBehaviorSanitizer build"
# -O1 -g1: sanitizer reports keep file:line, and the build stays quick on 2 cores.
cmake -S "$root" -B "$root/build/asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCRIA_SANITIZE=ON >/dev/null
cmake --build "$root/build/asan" -j "$jobs"
step "Sanitizer tests (all but the tests labelled slow, which the Release run covers)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build/asan" --output-on-failure -j "$jobs" -LE slow

step "Install and link against the installed library"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cmake --install "$root/build/release" --prefix "$stage" >/dev/null
PKG_CONFIG_PATH="$stage/lib/pkgconfig" g++ "$root/examples/print_version.cpp" -o "$stage/print_version" \
  $(PKG_CONFIG_PATH="$stage/lib/pkgconfig" pkg-config --cflags --libs cria) -Wl,-rpath,"$stage/lib"
"$stage/print_version"
test -x "$stage/bin/cria"
echo "install: ok"

step "End to end: cria serve driven by the OpenAI and Anthropic SDKs, and the web page in headless Chromium"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
"$root/scripts/e2e.sh" --cria "$root/build/release/cria"
echo "e2e: ok"
