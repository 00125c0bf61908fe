#!/usr/bin/env bash
# Load test of `cria serve` (tests/e2e/load.mjs): starts the server on
# 127.0.0.1 with 8 slots and the prompt cache on (--cache-ram), runs 1, 2, 4
# and 8 concurrent streaming chat clients (shared system prompt, varied user
# text, 64-token completions) for a fixed time per level, and prints a
# table: requests, errors, aggregate generated tokens/s, p50/p99 time to
# first token, server RSS min/max (VmRSS every second), and the ratio of 4
# clients to 1; then the drift check: the server's anonymous RSS (RssAnon)
# over the second half of the last level, less the prompt cache's growth
# then, must stay under 64 MiB (a leak or heap fragmentation otherwise).
# Exits nonzero on any error or a failed drift check. Not part of ctest
# (minutes of CPU); scripts/e2e.sh runs a --quick smoke of it on austen-7m.
#
#   scripts/load_test.sh [--model GGUF] [--quick] [--seconds N] [--clients 1,2,4,8]
#                        [--cache-ram MIB] [--cria PATH] [--serve-flags "EXTRA FLAGS"]
#                        [--abandon-every K]
# --model: default the Llama-3.2-1B-shaped Q4_0 file
#   /tmp/cria-speed-models/llama-1b-q4_0.gguf (make it with
#   build/release/bench/bench_runtime_decode --make-models /tmp/cria-speed-models llama-1b-q4_0.gguf).
# --seconds: total over all levels (default 300: five minutes, split evenly);
# --quick: 20 s in all (a check that it works, not a measurement).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRIA="${CRIA:-}"
MODEL=/tmp/cria-speed-models/llama-1b-q4_0.gguf
TOTAL_SECONDS=300
CLIENTS=1,2,4,8
CACHE_RAM=2048
SERVE_FLAGS=""
ABANDON=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --quick) TOTAL_SECONDS=20; shift ;;
    --seconds) TOTAL_SECONDS="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --cache-ram) CACHE_RAM="$2"; shift 2 ;;
    --cria) CRIA="$2"; shift 2 ;;
    --serve-flags) SERVE_FLAGS="$2"; shift 2 ;;
    --abandon-every) ABANDON="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ -z "$CRIA" ]]; then
  for c in "$ROOT/build/release/cria" "$ROOT/build/cria"; do [[ -x "$c" ]] && { CRIA="$c"; break; }; done
fi
[[ -x "$CRIA" ]] || { echo "no cria binary (build it, or pass --cria PATH)" >&2; exit 2; }
[[ -f "$MODEL" ]] || { echo "no model at $MODEL (see --help for how to make the default one)" >&2; exit 2; }
command -v node >/dev/null || { echo "node is needed (Node 18 or later)" >&2; exit 2; }
N_LEVELS=$(awk -F, '{print NF}' <<< "$CLIENTS")
PER_LEVEL=$(( TOTAL_SECONDS / N_LEVELS ))
(( PER_LEVEL >= 1 )) || PER_LEVEL=1

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

export CRIA_API_KEY="load-$RANDOM$RANDOM"
# shellcheck disable=SC2086  # SERVE_FLAGS holds several flags
"$CRIA" serve -m "$MODEL" --host 127.0.0.1 --port 0 --api-key "$CRIA_API_KEY" -np 8 -c 8192 --metrics \
  --cache-ram "$CACHE_RAM" $SERVE_FLAGS > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$WORK/server.log" && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.1
done
CRIA_URL="$(grep -o 'http://127.0.0.1:[0-9]*' "$WORK/server.log" | head -1)"
[[ -n "$CRIA_URL" ]] || { echo "server did not start" >&2; cat "$WORK/server.log" >&2; exit 1; }
echo "load test: $MODEL, clients $CLIENTS, ${PER_LEVEL} s per level, --cache-ram $CACHE_RAM (server pid $SERVER_PID)"

rc=0
CRIA_URL="$CRIA_URL" CRIA_PID="$SERVER_PID" timeout $(( PER_LEVEL * N_LEVELS + 180 )) \
  node "$ROOT/tests/e2e/load.mjs" --seconds-per-level "$PER_LEVEL" --clients "$CLIENTS" --abandon-every "$ABANDON" || rc=$?

# The server must still stop cleanly.
kill "$SERVER_PID" 2>/dev/null || true
src=0
wait "$SERVER_PID" || src=$?
SERVER_PID=""
if [[ $src -ne 0 ]]; then echo "cria serve exited with $src:" >&2; tail -30 "$WORK/server.log" >&2; exit 1; fi
if [[ $rc -ne 0 ]]; then echo "load test FAILED" >&2; tail -30 "$WORK/server.log" >&2; exit "$rc"; fi
echo "load test passed"
