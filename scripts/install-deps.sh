#!/usr/bin/env bash
# Installs everything cria needs to build and test on Debian 12 (bookworm).
# Runs apt-get as root, or through sudo for a normal user.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev libstb-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin  # pipeline parallelism over MPI (docs/DISTRIBUTED.md); optional when building by hand
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# CI always refreshes and installs, so a missing step can never hide behind a
# machine that happens to have a package already.
if [ "${CI:-}" = "true" ]; then missing=("${packages[@]}"); fi
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "Installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
