#!/usr/bin/env bash
# End-to-end tests of `cria serve`: the official OpenAI and Anthropic SDKs
# (tests/e2e/sdk.test.mjs) and the chat page in headless Chromium
# (tests/e2e/webui.test.mjs), against a server this script starts on
# 127.0.0.1 with the bundled austen-7m model; then router mode
# (tests/e2e/router.test.mjs: austen-7m and austen-1m in one --models-dir);
# then embeddings and rerank (tests/e2e/encoder.test.mjs) on tiny bert files
# (tools/mktinybert.py); then a smoke run of the load test
# (scripts/load_test.sh --seconds 8 on austen-7m, some clients hanging up
# mid-stream). With --load it also runs the full load test
# (scripts/load_test.sh: 1, 2, 4, 8 streaming clients, prompt cache on).
#
#   scripts/e2e.sh [--cria PATH] [--load] [--load-seconds N]
#                  [--load-model GGUF] [--load-flags "EXTRA SERVE FLAGS"]
# --load-seconds: the full test's total over its four levels (default 300).
# --load-model: default the Llama-3.2-1B-shaped Q4_0 file (load_test.sh --help).
#
# Installs what it needs: npm ci in tests/e2e, and Debian's chromium when it
# is missing (apt-get, needs root). Every step has a time limit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRIA="${CRIA:-$ROOT/build/cria}"
LOAD=0
LOAD_SECONDS=300
LOAD_MODEL=""
LOAD_FLAGS=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cria) CRIA="$2"; shift 2 ;;
    --load) LOAD=1; shift ;;
    --load-seconds) LOAD_SECONDS="$2"; shift 2 ;;
    --load-model) LOAD_MODEL="$2"; shift 2 ;;
    --load-flags) LOAD_FLAGS="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ -x "$CRIA" ]] || { echo "no cria binary at $CRIA (build it, or pass --cria PATH)" >&2; exit 2; }
MODEL="$ROOT/models/austen-7m/austen-7m-f16.gguf"

echo "== npm ci"
(cd "$ROOT/tests/e2e" && timeout 300 npm ci --no-audit --no-fund --loglevel=error)

CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
if [[ -z "$CHROMIUM" ]]; then
  echo "== apt-get install chromium"
  timeout 600 apt-get install -y --no-install-recommends chromium >/dev/null
  CHROMIUM="$(command -v chromium)"
fi
export CHROMIUM

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start_server() {  # args: extra flags; sets SERVER_PID and CRIA_URL
  : > "$WORK/server.log"
  local model_args=(-m "${SERVE_MODEL:-$MODEL}" -a austen-7m)
  if [[ -n "${ROUTER_ARGS+x}" ]]; then model_args=("${ROUTER_ARGS[@]}"); fi  # router mode: its own model flags
  "$CRIA" serve "${model_args[@]}" --host 127.0.0.1 --port 0 --api-key "$CRIA_API_KEY" \
    --metrics --slot-save-path "$WORK" "$@" > "$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    if grep -q "listening on" "$WORK/server.log"; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.1
  done
  CRIA_URL="$(grep -o 'http://127.0.0.1:[0-9]*' "$WORK/server.log" | head -1)"
  [[ -n "$CRIA_URL" ]] || { echo "server did not start" >&2; cat "$WORK/server.log" >&2; exit 1; }
  export CRIA_URL
  echo "server at $CRIA_URL (pid $SERVER_PID)"
}

stop_server() {  # SIGTERM: the server finishes cleanly and must exit 0 (sanitizer builds report here)
  kill "$SERVER_PID" 2>/dev/null || true
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=""
  if [[ $rc -ne 0 ]]; then echo "cria serve exited with $rc:" >&2; tail -50 "$WORK/server.log" >&2; exit 1; fi
}

export CRIA_API_KEY="e2e-$RANDOM$RANDOM"
export CRIA_MODEL="austen-7m"

echo "== SDK and web page tests"
# A tiny vision projector at the model's width (256), so requests may carry images.
python3 "$ROOT/tools/mktinymmproj.py" "$WORK/tiny-mmproj.gguf" 256 >/dev/null
start_server -np 4 -c 8192 --mmproj "$WORK/tiny-mmproj.gguf"
(cd "$ROOT/tests/e2e" && timeout 300 node --test --test-concurrency=1 sdk.test.mjs webui.test.mjs)
stop_server

echo "== router mode: two models in one process (--models-max 1)"
mkdir -p "$WORK/models"
ln -s "$MODEL" "$WORK/models/austen-7m.gguf"
ln -s "$ROOT/models/austen-1m/austen-1m-f16.gguf" "$WORK/models/austen-1m.gguf"
ROUTER_ARGS=(--models-dir "$WORK/models" --models-max 1)
start_server -np 2 -c 2048
unset ROUTER_ARGS
CRIA_MODEL_A=austen-7m CRIA_MODEL_B=austen-1m \
  bash -c "cd '$ROOT/tests/e2e' && timeout 300 node --test --test-concurrency=1 router.test.mjs"
stop_server

echo "== encoder tests (bert embedder and reranker from tools/mktinybert.py)"
python3 "$ROOT/tools/mktinybert.py" "$WORK/tiny-bert.gguf" >/dev/null
python3 "$ROOT/tools/mktinybert.py" "$WORK/tiny-bert-reranker.gguf" --reranker >/dev/null
SERVE_MODEL="$WORK/tiny-bert.gguf" start_server
(cd "$ROOT/tests/e2e" && ENCODER_KIND=embedder timeout 120 node --test encoder.test.mjs)
stop_server
SERVE_MODEL="$WORK/tiny-bert-reranker.gguf" start_server
(cd "$ROOT/tests/e2e" && ENCODER_KIND=reranker timeout 120 node --test encoder.test.mjs)
stop_server

echo "== load test smoke (austen-7m)"
"$ROOT/scripts/load_test.sh" --cria "$CRIA" --model "$MODEL" --seconds 8 --abandon-every 5

if [[ "$LOAD" == 1 ]]; then
  echo "== load test"
  "$ROOT/scripts/load_test.sh" --cria "$CRIA" --seconds "$LOAD_SECONDS" ${LOAD_MODEL:+--model "$LOAD_MODEL"} \
    ${LOAD_FLAGS:+--serve-flags "$LOAD_FLAGS"}
fi
echo "== e2e passed"
