#!/usr/bin/env bash
# Instructions per keyed gateway request (callgrind), for each source tree given: an A/B that holds
# on a busy machine. The gateway's counterpart of engine_instructions.sh.
#
#   bash bench/gateway_instructions.sh TREE [TREE...]
#   PROMPT_BYTES=40000 bash bench/gateway_instructions.sh TREE...   (a 40 kB conversation a request)
#   REQUEST=embeddings bash bench/gateway_instructions.sh TREE...    (64 x 1,536-dim base64 vectors)
#
# TREE is a checkout (`git worktree add /tmp/old <commit>`), run with PYTHONPATH=TREE/src and this
# checkout's .venv and driver (bench/_gateway_requests.py): the `laneway serve` app of a config with
# one chat lane on `laneway sim` (CPU 0), a key with an rpm limit and SQLite telemetry, served in
# the driver's process (CPU 1) to an aiohttp client in the same event loop, c=1, under
# `valgrind --tool=callgrind` for 200 and for 1200 requests after its warm-up; the difference of the
# two totals over 1000 is printed as instructions per request (server and client together).
# Telemetry rows are written every 200 (telemetry.batch_size) and at shutdown, not on the writer's
# 1 s timer: under callgrind a request takes tens of times longer, so a timer-woken writer wrote a
# batch every few requests, as many as the host's speed allowed, and the count moved with the load.
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
taskset -c 0 .venv/bin/laneway sim --port "$port" >/dev/null 2>&1 &
sim=$!
out=$(mktemp -d)
trap 'kill $sim; rm -rf "$out"' EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done
embed_lane() {  # the lane REQUEST=embeddings calls, pinned to the sim's 1,536 dimensions
  [ "${REQUEST:-chat}" = embeddings ] || return 0
  printf '  em:\n    kind: embed\n    dimensions: 1536\n    sources:\n'
  printf '      - {provider: openai, base_url: "http://127.0.0.1:%s/b/dims=1536/v1", model: e}\n' "$port"
}
total() {  # TREE CALLS -> callgrind's total instructions of the driver process
  rm -f "$out/telemetry.sqlite3"*
  cat >"$out/laneway.yaml" <<YAML
lanes:
  gw:
    kind: chat
    deadline: 30s
    sources:
      - {provider: openai, base_url: "http://127.0.0.1:$port/b/ok/v1", model: sim-model}
$(embed_lane)
server:
  host: 127.0.0.1
  keys:
    - {name: bench, key: sk-bench-0123456789, rpm: 100000000}
telemetry:
  url: sqlite:///$out/telemetry.sqlite3
  flush_interval: 1h
YAML
  PYTHONHASHSEED=0 PYTHONPATH="$1/src" taskset -c 1 valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.%p" .venv/bin/python bench/_gateway_requests.py \
    "$out/laneway.yaml" "$2" "${PROMPT_BYTES:-0}" 2>"$out/log" >/dev/null
  local pid
  pid=$(sed -n '1s/^==\([0-9]*\)==.*/\1/p' "$out/log")
  sed -n "s/^==$pid== Collected : //p" "$out/log"
}
for tree in "$@"; do
  few=$(total "$tree" 200)
  many=$(total "$tree" 1200)
  echo "$tree: $(( (many - few) / 1000 )) instructions per request"
done
