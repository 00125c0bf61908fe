#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build cria
# (Release), and generate text with the bundled default model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# When ccache is installed, paths relative to the checkout let every clone share its cache.
export CCACHE_BASEDIR="$root"
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build/release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCRIA_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build/release" --target cria -j "$(nproc)"
"$root/build/release/cria" run -m "$root/models/stories260K/stories260K.gguf" -p "Once upon a time" -n 128 --temp 0
