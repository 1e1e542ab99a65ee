#!/usr/bin/env bash
# Instructions per relayed chunk and per stream (callgrind), for each source tree given: the
# streaming A/B that holds on a busy machine. The streaming counterpart of gateway_instructions.sh.
#
#   bash bench/streaming_instructions.sh TREE [TREE...]
#
# The first line counts the floor: the bare uvicorn + aiohttp relay (bench/_bare_proxy.py) served
# the same way in the driver, so each tree's count can be read as a multiple of it.
# TREE is a checkout (`git worktree add /tmp/old <commit>`), run with PYTHONPATH=TREE/src and this
# checkout's .venv and driver (bench/_stream_requests.py): the `laneway serve` app of a config with
# one chat lane on the stamp upstream (bench/_stamp_upstream.py, CPU 0), a key with an rpm limit,
# SQLite telemetry and the JSON access log, served in the driver's process (CPU 1) to an aiohttp
# client in the same event loop (uvloop), c=1, under `valgrind --tool=callgrind`. The upstream
# writes each answer whole in one write (its `/burst` path), so how the reads cut it does not hang
# on the host's speed: the counts repeat. 10 and 30 streams of 2 chunks and 10 of 202: the
# difference of 202 and 2 chunks over 2,000 is the instructions of one relayed chunk when chunks
# arrive many to a read (a relay's cost per event); of 30 and 10 streams over 20, those of one
# 2-chunk stream: a stream's fixed part (request, admission, opening, first chunk, settle,
# record) and one more chunk. What a read costs beyond its events (one event a read, as a paced
# stream arrives) is not counted here: under callgrind the gateway takes milliseconds a read, so
# paced reads merge, and the loop's idle work between them would count with them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$out"' EXIT
upstream() {  # CHUNKS VAR -> VAR set to the port of a stamp upstream streaming CHUNKS chunks
  local port
  port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  taskset -c 0 .venv/bin/python bench/_stamp_upstream.py "$port" --chunks "$1" >/dev/null 2>&1 &
  pids+=($!)  # not in a $(...) subshell, so the trap stops it
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/stats" && break
    sleep 0.1
  done
  printf -v "$2" '%s' "$port"
}
total() {  # TREE PORT STREAMS -> callgrind's total instructions of the driver process
  rm -f "$out/telemetry.sqlite3"*
  local where="$out/laneway.yaml"
  [[ "$1" == bare ]] && where="bare:http://127.0.0.1:$2/burst"
  cat >"$out/laneway.yaml" <<YAML
lanes:
  gw:
    kind: chat
    deadline: 60s
    sources:
      - {provider: openai, base_url: "http://127.0.0.1:$2/burst/v1", model: m}
server:
  host: 127.0.0.1
  keys:
    - {name: bench, key: sk-bench-0123456789, rpm: 100000000}
telemetry:
  url: sqlite:///$out/telemetry.sqlite3
YAML
  PYTHONHASHSEED=0 PYTHONPATH="$1/src" taskset -c 1 valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.%p" .venv/bin/python bench/_stream_requests.py \
    "$where" "$3" 2>"$out/log" >/dev/null
  local pid
  pid=$(sed -n '1s/^==\([0-9]*\)==.*/\1/p' "$out/log")
  sed -n "s/^==$pid== Collected : //p" "$out/log"
}
upstream 2 short
upstream 202 long
for tree in bare "$@"; do
  few=$(total "$tree" "$short" 10)
  more=$(total "$tree" "$short" 30)
  many=$(total "$tree" "$long" 10)
  echo "$tree: $(( (many - few) / 2000 )) instructions per relayed chunk," \
    "$(( (more - few) / 20 )) per 2-chunk stream"
done
