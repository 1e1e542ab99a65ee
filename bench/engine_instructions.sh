#!/usr/bin/env bash
# Instructions per lw.chat() call (callgrind), for each source tree given: an A/B that holds on a busy machine.
#
#   bash bench/engine_instructions.sh [--c N] [--lane one|two|hedged] [--mock] TREE [TREE...]
#
# --lane picks the client's lane (bench/_engine_calls.py): `one` (default), `two` sources, or the
# same two with a `hedge` that never fires (`hedged`): hedged minus two is an unused hedge's price.
# --mock answers in process instead of through `laneway sim` (no socket): the engine's own
# instructions, the same to the instruction run after run.
# TREE is a checkout (a git worktree of the commit to compare: `git worktree add /tmp/old 8cb13dd`);
# each is run with PYTHONPATH=TREE/src and this checkout's .venv and driver (bench/_engine_calls.py).
# `laneway sim` is pinned to CPU 0 and the client to CPU 1; the client runs under
# `valgrind --tool=callgrind` for 200 and for 1200 calls after its warm-up, and the difference of
# the two totals over 1000 is printed as instructions per call. About 3 minutes a tree, quiet or not.
set -euo pipefail
cd "$(dirname "$0")/.."
concurrency=1
lane=one
upstream=
while [[ "${1:-}" == --* ]]; do
  case $1 in
    --c) concurrency=$2 ;;
    --lane) lane=$2 ;;
    --mock) upstream=mock; shift; continue ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
if [[ -z "$upstream" ]]; then
  port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  taskset -c 0 .venv/bin/laneway sim --port "$port" >/dev/null 2>&1 &
  sim=$!
  trap 'kill $sim' EXIT
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
  done
  upstream="http://127.0.0.1:$port/b/ok/v1"
fi
out=$(mktemp -d)
total() {  # TREE CALLS -> callgrind's total instructions of the client process
  # Only the client's own line counts: a child it forks (a price catalogue search) reports too.
  PYTHONHASHSEED=0 PYTHONPATH="$1/src" taskset -c 1 valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.%p" .venv/bin/python bench/_engine_calls.py \
    "$upstream" "$concurrency" "$2" "$lane" 2>"$out/log" >/dev/null
  local pid
  pid=$(sed -n '1s/^==\([0-9]*\)==.*/\1/p' "$out/log")
  sed -n "s/^==$pid== Collected : //p" "$out/log"
}
label=$lane
if [[ "$upstream" == mock ]]; then label="$lane (mock)"; fi
for tree in "$@"; do
  few=$(total "$tree" 200)
  many=$(total "$tree" 1200)
  echo "$tree c=$concurrency lane=$label: $(( (many - few) / 1000 )) instructions per call"
done
rm -rf "$out"
